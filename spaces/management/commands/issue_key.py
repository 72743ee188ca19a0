from django.core.management.base import BaseCommand, CommandError

from common.refusals import DomainError
from spaces import services
from spaces.models import Role, Space


class Command(BaseCommand):
    help = "Create a member with a new API key; the key is printed alone on the last line."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--role", required=True, choices=Role.values)
        parser.add_argument("--name", help="Member name (default: generated)")

    def handle(self, *args, slug: str, role: str, name: str | None, **options):
        space = Space.objects.filter(slug=slug).first()
        if space is None:
            raise CommandError(f"No space {slug!r}.")
        try:
            member = services.add_member(space=space, role=role, name=name)
        except DomainError as exc:
            raise CommandError(exc.detail) from None
        key, raw = services.issue_key(member=member)
        self.stdout.write(f"Member {member.name} (id {member.pk}, {member.role}) in {slug}; key prefix {key.prefix}.")
        self.stdout.write(raw)
