import time

from django.core.management.base import BaseCommand, CommandError
from django.db import InterfaceError, OperationalError, connection

from exports.services import drain_exports

# While the database is away (a restart, a failover), wait this long between tries, doubling
# up to the most: an export cut off mid-write is taken again once its lease runs out.
FIRST_WAIT, MOST_WAIT = 1.0, 30.0


class Command(BaseCommand):
    help = (
        "Process exports: take a lease on each waiting export (SKIP LOCKED, so several workers share the queue), "
        "write the space as JSON in chunks and settle it. --once drains the queue and exits, non-zero when an "
        "attempt failed; otherwise it polls, printing each failure with its reason."
    )

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="Drain what is waiting, then exit")
        parser.add_argument("--poll", type=float, default=2.0, metavar="SECONDS", help="Pause when idle (default 2)")

    def handle(self, *args, once: bool, poll: float, **options):
        shown = [0.0]

        def progress(export: int, section: str, rows: int) -> None:
            """A line at most every two seconds while a large export is written."""
            if time.monotonic() - shown[0] >= 2:
                shown[0] = time.monotonic()
                self.stdout.write(f"Export {export}: {rows:,} {section} rows written…")

        wait = FIRST_WAIT
        while True:
            try:
                outcomes = drain_exports(progress)
            except (OperationalError, InterfaceError) as error:
                connection.close()  # a connection the server dropped is no use: the next try opens a new one
                if once:
                    raise CommandError(f"The database is not reachable: {error}".strip()) from error
                self.stderr.write(f"The database is not reachable ({str(error).strip() or type(error).__name__}); "
                                  f"trying again in {wait:g} s.")
                time.sleep(wait)
                wait = min(wait * 2, MOST_WAIT)
                continue
            wait = FIRST_WAIT
            for outcome in outcomes:
                if outcome.state == "completed":
                    self.stdout.write(f"Export {outcome.export}: attempt {outcome.attempt} completed.")
                else:
                    then = "failed: a steward may retry it" if outcome.state == "failed" else "it will be retried"
                    self.stderr.write(f"Export {outcome.export}: attempt {outcome.attempt} failed ({outcome.reason}); "
                                      f"{then}.")
            if once:
                failed = [o for o in outcomes if o.state != "completed"]
                self.stdout.write(f"Processed {len(outcomes)} export(s).")
                if failed:
                    raise CommandError(f"{len(failed)} export attempt(s) failed.")
                return
            if not outcomes:
                time.sleep(poll)
