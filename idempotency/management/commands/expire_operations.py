from django.core.management.base import BaseCommand

from idempotency.services import expire_operations


class Command(BaseCommand):
    help = "End the leases of operations whose attempt stopped reporting: they become unknown and retryable."

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="Count, change nothing")

    def handle(self, *args, dry_run: bool, **options):
        count = expire_operations(dry_run=dry_run)
        self.stdout.write(f"{'Would expire' if dry_run else 'Expired'} {count} operation lease(s).")
