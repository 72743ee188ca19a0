from pathlib import Path

from django.core.management.base import BaseCommand
from django.db import transaction

from spaces import services
from spaces.catalog_files import read_catalog_file
from spaces.models import Space

DEMO_FILE = Path(__file__).resolve().parents[2] / "fixtures" / "agent-lab.json"


class Command(BaseCommand):
    help = "Create (or refresh) the agent-lab demo space with its catalog and print a new steward key (last line)."

    def handle(self, *args, **options):
        rows = read_catalog_file(DEMO_FILE)
        with transaction.atomic():
            space = Space.objects.filter(slug="agent-lab").first() or services.create_space(
                slug="agent-lab", name="Agent lab"
            )
            services.import_catalog(space=space, rows=rows)
            steward = services.add_member(space=space, role="steward")
            _, raw = services.issue_key(member=steward)
        self.stdout.write(f"Space agent-lab ready with {len(rows)} catalog rows; steward {steward.name}:")
        self.stdout.write(raw)
