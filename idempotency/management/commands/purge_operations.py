from django.conf import settings
from django.core.management.base import BaseCommand

from idempotency.services import purge_operations


class Command(BaseCommand):
    help = "Delete operations older than the retention (SPACES_OPERATION_RETENTION_HOURS, default 24)."

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="Count, change nothing")

    def handle(self, *args, dry_run: bool, **options):
        count = purge_operations(dry_run=dry_run)
        hours = settings.SPACES_OPERATION_RETENTION_HOURS
        self.stdout.write(f"{'Would purge' if dry_run else 'Purged'} {count} operation(s) older than {hours} h.")
