"""What the process counts and traces, at the bottom of the house: imported by the apps, it
imports none of them (``counters``: the Prometheus series; ``tracing``: OpenTelemetry)."""
