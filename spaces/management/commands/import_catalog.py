import time

from django.core.management.base import BaseCommand, CommandError

from spaces import services
from spaces.catalog_files import CatalogFileError, read_catalog_file
from spaces.models import Space


class Command(BaseCommand):
    help = (
        "Upsert a space's charter catalog from FILE: a JSON list of "
        '{"work_item_id", "canonical_title", "aliases"} rows, or an object with that list under "catalog".'
    )

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("file")

    def handle(self, *args, slug: str, file: str, **options):
        space = Space.objects.filter(slug=slug).first()
        if space is None:
            raise CommandError(f"No space {slug!r}. Create it with: manage.py create_space {slug} --name NAME")
        started = time.monotonic()
        try:
            rows = read_catalog_file(file)
        except CatalogFileError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"Read {len(rows)} rows from {file}.")

        def progress(done: int, total: int) -> None:
            if total > 5000:
                self.stdout.write(f"  {done}/{total} rows upserted")

        count = services.import_catalog(space=space, rows=rows, progress=progress)
        self.stdout.write(f"Upserted {count} catalog rows into {slug} in {time.monotonic() - started:.1f} s.")
