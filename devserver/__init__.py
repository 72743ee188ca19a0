"""What a development machine runs beside the service: the embedded PostgreSQL server that
``bin/run``, ``bin/test`` and the benchmarks start when no ``DATABASE_URL`` is given."""
