from django.core.management.base import BaseCommand, CommandError

from spaces.models import Space
from tasks import similarity


class Command(BaseCommand):
    help = (
        "Print the likely duplicate pairs among a space's live tasks (SPEC §16), most alike first: "
        "titles worded differently for what looks like the same work. Reads only; supersede one of "
        "a pair, or mark it not a duplicate, in the admin, on the board or through the API."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", help="the space, by its slug")
        parser.add_argument("--limit", type=int, default=50, help="at most this many pairs (default 50)")
        parser.add_argument("--threshold", type=float,
                            help="how alike, 0.05-1 (default: the space's similar_threshold)")

    def handle(self, *args, slug: str, limit: int, threshold: float | None, **options):
        space = Space.objects.filter(slug=slug).first()
        if space is None:
            raise CommandError(f"No space {slug!r}.")
        if threshold is not None:
            if not 0.05 <= threshold <= 1:
                raise CommandError("--threshold is a number from 0.05 to 1.")
            space.similar_threshold = threshold  # this run only: nothing is saved
        if limit < 1:
            raise CommandError("--limit is at least 1.")
        pairs = similarity.likely_duplicates(space, limit=limit)
        for first, second, score in pairs:
            self.stdout.write(f"{score:.2f}  #{first.number} {first.title} ({first.status})\n"
                              f"      #{second.number} {second.title} ({second.status})")
        self.stdout.write(f"{len(pairs)} likely duplicate pair{'s' if len(pairs) != 1 else ''} in {slug} "
                          f"(threshold {space.similar_threshold:g}).")
