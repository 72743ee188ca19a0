import time

from django.core.management.base import BaseCommand

from tasks.exports import drain_exports


class Command(BaseCommand):
    help = (
        "Process exports: take a lease on each waiting export (SKIP LOCKED, so several workers share the queue), "
        "write the space as JSON and settle it. --once drains the queue and exits; otherwise it polls."
    )

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="Drain what is waiting, then exit")
        parser.add_argument("--poll", type=float, default=2.0, metavar="SECONDS", help="Pause when idle (default 2)")

    def handle(self, *args, once: bool, poll: float, **options):
        while True:
            done = drain_exports()
            if done or once:
                self.stdout.write(f"Processed {done} export(s).")
            if once:
                return
            if not done:
                time.sleep(poll)
