#!/usr/bin/env python
"""Django's command-line utility for the Spaces service."""
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "settings.base")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    from common.problems import DATABASE_AWAY
    from devserver import run_env

    run_env.load()  # beside a running bin/run: its database, secret key and debug setting
    from telemetry import tracing

    tracing.instrument()  # each only when OTEL_* ask for traces
    tracing.start()
    command = sys.argv[1] if len(sys.argv) > 1 else "help"
    try:
        with tracing.command_span(command, whole=command != "runserver"):
            execute_from_command_line(sys.argv)
    except ImproperlyConfigured as error:
        # The configuration is the user's to fix: say what is missing in one line, not a traceback.
        hint = "" if run_env.env_file().is_file() else " (beside bin/run, start it once first: it writes them)"
        print(f"manage.py: {error}{hint}", file=sys.stderr)
        sys.exit(2)
    except DATABASE_AWAY as error:
        # The database is away (SPEC §9: exit non-zero on failure): one line saying so, not a
        # traceback. (The commands that loop ride it out instead: common/loops.py.)
        from common.problems import error_summary

        print(f"manage.py: the database is not reachable: {error_summary(error)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
