import argparse
import time

from django.core.management.base import BaseCommand, CommandError

from common.loops import Beside, add_give_up_argument, positive_seconds, run_loop
from exports.services import drain_exports
from tasks.commands import fire_due_routines
from webhooks.delivery import DEFAULT_SLOTS, Dispatcher


def positive_count(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 64:
        raise argparse.ArgumentTypeError(f"takes a whole number from 1 to 64, not {text!r}")
    return int(text)


class Command(BaseCommand):
    help = (
        "Process exports: take a lease on each waiting export (SKIP LOCKED, so several workers share the queue), "
        "write the space as JSON in chunks and settle it. --once drains the queue and exits, non-zero when an "
        "attempt failed; otherwise it polls, printing each failure with its reason, rides out a database restart "
        "(an export cut off mid-write is taken again once its lease runs out), and stops on SIGTERM or SIGINT "
        "once the exports it took are finished. Beside the exports it sends the space's webhooks (SPEC §17): up "
        "to --slots endpoints at once, each in seq order, woken by the feed as events commit; and it makes the "
        "routines' due tasks (SPEC §22), each period once, as sweep does."
    )

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="Drain what is waiting, then exit")
        parser.add_argument("--poll", type=positive_seconds, default=2.0, metavar="SECONDS", help="Pause when idle (default 2)")
        parser.add_argument("--slots", type=positive_count, default=DEFAULT_SLOTS, metavar="N",
                            help=f"Webhook endpoints served at once (default {DEFAULT_SLOTS})")
        add_give_up_argument(parser)

    def handle(self, *args, once: bool, poll: float, give_up_after: float, slots: int, **options):
        shown = [0.0]

        def progress(export: int, section: str, rows: int) -> None:
            """A line at most every two seconds while a large export is written."""
            if time.monotonic() - shown[0] >= 2:
                shown[0] = time.monotonic()
                self.stdout.write(f"Export {export}: {rows:,} {section} rows written…")

        def drain() -> list:
            made = fire_due_routines()
            if made:
                self.stdout.write(f"Routines: {made} task(s) made.")
            outcomes = drain_exports(progress)
            for outcome in outcomes:
                if outcome.state == "completed":
                    self.stdout.write(f"Export {outcome.export}: attempt {outcome.attempt} completed.")
                else:
                    then = "failed: a steward may retry it" if outcome.state == "failed" else "it will be retried"
                    self.stderr.write(f"Export {outcome.export}: attempt {outcome.attempt} failed ({outcome.reason}); "
                                      f"{then}.")
            return outcomes

        deliveries = Dispatcher(slots, listen=not once)
        if not once:
            run_loop(lambda: 0 if drain() else poll, stdout=self.stdout, stderr=self.stderr,
                     give_up_after=give_up_after,
                     beside=[Beside(deliveries.round, deliveries.pause, deliveries.close)])
        outcomes = drain()  # the database away: manage.py says so in one line, status 1
        delivered = deliveries.drain()
        deliveries.close()
        failed = [o for o in outcomes if o.state != "completed"]
        self.stdout.write(f"Processed {len(outcomes)} export(s); {delivered} webhook delivery(ies) made.")
        if failed:
            raise CommandError(f"{len(failed)} export attempt(s) failed.")
