"""The operator's front (SPEC §20): ``/healthz`` and ``/readyz`` (``health``), ``/metrics``
(``metrics``, reading the apps at scrape time) and each request's log line and metrics
(``requests``, the outermost middleware)."""
