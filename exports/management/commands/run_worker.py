import time

from django.core.management.base import BaseCommand, CommandError

from common.loops import add_give_up_argument, positive_seconds, run_loop
from exports.services import drain_exports


class Command(BaseCommand):
    help = (
        "Process exports: take a lease on each waiting export (SKIP LOCKED, so several workers share the queue), "
        "write the space as JSON in chunks and settle it. --once drains the queue and exits, non-zero when an "
        "attempt failed; otherwise it polls, printing each failure with its reason, rides out a database restart "
        "(an export cut off mid-write is taken again once its lease runs out), and stops on SIGTERM or SIGINT "
        "once the exports it took are finished."
    )

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="Drain what is waiting, then exit")
        parser.add_argument("--poll", type=positive_seconds, default=2.0, metavar="SECONDS", help="Pause when idle (default 2)")
        add_give_up_argument(parser)

    def handle(self, *args, once: bool, poll: float, give_up_after: float, **options):
        shown = [0.0]

        def progress(export: int, section: str, rows: int) -> None:
            """A line at most every two seconds while a large export is written."""
            if time.monotonic() - shown[0] >= 2:
                shown[0] = time.monotonic()
                self.stdout.write(f"Export {export}: {rows:,} {section} rows written…")

        def drain() -> list:
            outcomes = drain_exports(progress)
            for outcome in outcomes:
                if outcome.state == "completed":
                    self.stdout.write(f"Export {outcome.export}: attempt {outcome.attempt} completed.")
                else:
                    then = "failed: a steward may retry it" if outcome.state == "failed" else "it will be retried"
                    self.stderr.write(f"Export {outcome.export}: attempt {outcome.attempt} failed ({outcome.reason}); "
                                      f"{then}.")
            return outcomes

        if not once:
            run_loop(lambda: 0 if drain() else poll, stdout=self.stdout, stderr=self.stderr,
                     give_up_after=give_up_after)
        outcomes = drain()  # the database away: manage.py says so in one line, status 1
        failed = [o for o in outcomes if o.state != "completed"]
        self.stdout.write(f"Processed {len(outcomes)} export(s).")
        if failed:
            raise CommandError(f"{len(failed)} export attempt(s) failed.")
