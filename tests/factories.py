"""factory-boy factories for the models tests build on."""
from __future__ import annotations

import factory

from spaces import services
from spaces.models import CharterItem, Member, Post, Space


class SpaceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Space

    slug = factory.Sequence(lambda n: f"space-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.title())


class MemberFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Member

    space = factory.SubFactory(SpaceFactory)
    name = factory.Sequence(lambda n: f"member-{n}")
    role = "writer"


class CharterItemFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = CharterItem

    space = factory.SubFactory(SpaceFactory)
    work_item_id = factory.Sequence(lambda n: f"T{n + 1}")
    position = factory.LazyAttribute(lambda o: int(o.work_item_id[1:]))
    canonical_title = factory.Sequence(lambda n: f"work item {n}")
    aliases = factory.LazyFunction(list)


class PostFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Post

    space = factory.SubFactory(SpaceFactory)
    author = factory.SubFactory(MemberFactory, space=factory.SelfAttribute("..space"))
    body = "a result"


def member_with_key(space: Space, role: str, name: str | None = None) -> tuple[Member, str]:
    member = MemberFactory(space=space, role=role, **({"name": name} if name else {}))
    _, raw = services.issue_key(member=member)
    return member, raw


def create_task(**arguments):
    """A task created as a request would create it: in a unit of work of its own."""
    from commands.unit import in_unit
    from tasks.commands import create_once

    return in_unit(create_once, **arguments)
