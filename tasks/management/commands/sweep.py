from django.core.management.base import BaseCommand

from calls.services import purge_long_calls
from idempotency.services import expire_operations, purge_operations
from allocation.services import expire_reservations, purge_conflict_counts
from common.loops import add_give_up_argument, positive_seconds, run_loop
from events import feed
from spaces.services import purge_catalog_changes
from spaces.throttles import purge_rate_counters
from tasks.claims import expire_claims
from tasks.questions import expire_questions
from tasks.commands import fire_due_routines


class Command(BaseCommand):
    help = (
        "Every expiry in one go: reservations, claims, questions past their deadline, operation leases; the "
        "routines' due periods, each made once; then purge old operations, the long calls (MCP tasks) that run them, "
        "rate counters, conflict counts, catalog changes and feed events past their space's retention. "
        "Safe to run from several places at once: each item is changed by one compare-and-set, so a second "
        "run changes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("--every", type=positive_seconds, metavar="SECONDS",
                            help="Loop, sweeping every SECONDS; rides out a database restart and stops on SIGTERM "
                                 "or SIGINT after the sweep in progress")
        parser.add_argument("--dry-run", action="store_true", help="Count, change nothing")
        add_give_up_argument(parser)

    def handle(self, *args, every: float | None, dry_run: bool, give_up_after: float, **options):
        def sweep() -> float:
            counts = {
                "reservations": expire_reservations(dry_run=dry_run),
                "claims": expire_claims(dry_run=dry_run),
                "questions past their deadline": expire_questions(dry_run=dry_run),
                "operation leases": expire_operations(dry_run=dry_run),
                "routine tasks": fire_due_routines(dry_run=dry_run),
                "old operations": purge_operations(dry_run=dry_run),
                "old long calls": purge_long_calls(dry_run=dry_run),
                "old rate counters": purge_rate_counters(dry_run=dry_run),
                "old conflict counts": purge_conflict_counts(dry_run=dry_run),
                "old catalog changes": purge_catalog_changes(dry_run=dry_run),
                "old events": feed.purge(dry_run=dry_run),
            }
            verb = "Would sweep" if dry_run else "Swept"
            self.stdout.write(f"{verb}: " + ", ".join(f"{n} {what}" for what, n in counts.items()) + ".")
            return every

        if every is None:
            sweep()
            return
        run_loop(sweep, stdout=self.stdout, stderr=self.stderr, give_up_after=give_up_after)
