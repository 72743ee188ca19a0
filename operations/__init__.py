"""What operators run the service with (SPEC §20): health and readiness, metrics, logs, traces."""
