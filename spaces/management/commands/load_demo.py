from pathlib import Path

from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import transaction

from spaces import services
from spaces.catalog_files import read_catalog_file
from spaces.models import Member, Role, Space

DEMO_STEWARD = "demo-steward"

DEMO_FILE = Path(__file__).resolve().parents[2] / "fixtures" / "agent-lab.json"


class Command(BaseCommand):
    help = ("Create the agent-lab demo space with its catalog the first time (later runs leave the space and "
            "its catalog as its stewards made them), and print a fresh key for its one demo steward (last line); "
            "the steward's earlier keys are revoked (only their hashes are kept).")

    def add_arguments(self, parser):
        parser.add_argument("--migrate", action="store_true",
                            help="apply the migrations first (as `migrate --no-input`), in the same process")
        parser.add_argument("--admin", metavar="USERNAME",
                            help="then make this admin login if it does not exist, with the password in "
                                 "DJANGO_SUPERUSER_PASSWORD (as `createsuperuser --no-input`)")

    def handle(self, *args, **options):
        # bin/run's three steps in one process: each Django start costs seconds (docs/benchmarks.md).
        if options["migrate"]:
            call_command("migrate", interactive=False, verbosity=0)
        self.load_demo()
        if options["admin"]:
            from django.contrib.auth import get_user_model

            if not get_user_model().objects.filter(username=options["admin"]).exists():
                call_command("createsuperuser", interactive=False, username=options["admin"],
                             email=f"{options['admin']}@localhost", verbosity=0)

    def load_demo(self) -> None:
        with transaction.atomic():
            space = Space.objects.select_for_update().filter(slug="agent-lab").first()
            if space is None:
                rows = read_catalog_file(DEMO_FILE)
                space = services.create_space(slug="agent-lab", name="Agent lab")
                services.import_catalog(space=space, rows=rows)
                made = f"made with {len(rows)} catalog rows"
            else:
                made = "kept as it is"  # a steward's edits to the catalog stay
            steward = Member.objects.filter(space=space, name=DEMO_STEWARD).first() or services.add_member(
                space=space, role=Role.STEWARD, name=DEMO_STEWARD)
            for key in steward.api_keys.filter(revoked_at=None):
                services.revoke_key(key=key)
            _, raw = services.issue_key(member=steward)
        self.stdout.write(f"Space agent-lab {made}; steward {steward.name}:")
        self.stdout.write(raw)
