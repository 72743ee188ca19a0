from django.core.management.base import BaseCommand, CommandError

from common.refusals import DomainError
from spaces import services
from spaces.catalog_files import CatalogFileError, read_catalog_file


class Command(BaseCommand):
    help = "Create a space (SLUG, --name) and optionally import its charter catalog from a JSON file."

    def add_arguments(self, parser):
        parser.add_argument("slug", help="URL name of the space, e.g. agent-lab")
        parser.add_argument("--name", required=True, help="Display name")
        parser.add_argument("--catalog", metavar="FILE", help="Catalog JSON (a list of rows or {\"catalog\": [...]})")

    def handle(self, *args, slug: str, name: str, catalog: str | None, **options):
        rows = []
        if catalog:
            try:
                rows = read_catalog_file(catalog)
            except CatalogFileError as exc:
                raise CommandError(str(exc)) from None
        try:
            space = services.create_space(slug=slug, name=name)
        except DomainError as exc:
            raise CommandError(exc.detail) from None
        self.stdout.write(f"Created space {space.slug} ({space.name}).")
        if rows:
            count = services.import_catalog(space=space, rows=rows)
            self.stdout.write(f"Imported {count} catalog rows.")
