from django.core.management.base import BaseCommand

from tasks.claims import expire_claims


class Command(BaseCommand):
    help = (
        "Lapse claims past their expiry: notify their holders and reopen tasks nobody holds. "
        "Safe to run from several places at once (each claim lapses once)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="Count, change nothing")

    def handle(self, *args, dry_run: bool, **options):
        count = expire_claims(dry_run=dry_run)
        verb = "Would lapse" if dry_run else "Lapsed"
        self.stdout.write(f"{verb} {count} claim{'s' if count != 1 else ''}.")
