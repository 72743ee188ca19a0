import time

from django.core.management.base import BaseCommand, CommandError

from exports.services import drain_exports


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

        while True:
            outcomes = drain_exports(progress)
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
