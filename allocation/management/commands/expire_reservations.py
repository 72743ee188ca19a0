from django.core.management.base import BaseCommand

from allocation.services import expire_reservations


class Command(BaseCommand):
    help = (
        "Delete reservations whose allocation window has passed (left by crashed processes). "
        "Creation never waits for this: stale reservations are also expired lazily."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="Count, change nothing")

    def handle(self, *args, dry_run: bool, **options):
        count = expire_reservations(dry_run=dry_run)
        verb = "Would expire" if dry_run else "Expired"
        self.stdout.write(f"{verb} {count} reservation{'s' if count != 1 else ''}.")
