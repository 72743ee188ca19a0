"""Reads scoped to one space: anything outside it is simply not found (SPEC §2)."""
from __future__ import annotations

from django.db.models import Prefetch, Q, QuerySet

from spaces import errors
from spaces.models import ApiKey, CharterItem, JoinLink, Member, Post, Role, Space


def get_member(*, space: Space, member_id: object) -> Member:
    member = Member.objects.filter(space=space, pk=as_int(member_id)).first()
    if member is None:
        raise errors.NotFound("No such member in this space.")
    return member


def get_join_link(*, space: Space, link_id: object) -> JoinLink:
    link = JoinLink.objects.filter(space=space, pk=as_int(link_id)).first()
    if link is None:
        raise errors.NotFound("No such join link in this space.")
    return link


def get_charter_item(*, space: Space, work_item_id: str) -> CharterItem:
    item = CharterItem.objects.filter(space=space, work_item_id=work_item_id).first()
    if item is None:
        raise errors.NotFound(f"No catalog row {work_item_id} in this space.")
    return item


def get_key(*, space: Space, prefix: str) -> ApiKey:
    key = ApiKey.objects.select_related("member").filter(space=space, prefix=prefix).first()
    if key is None:
        raise errors.KeyNotFound()
    return key


def get_post(*, space: Space, post_id: object) -> Post:
    post = Post.objects.select_related("author").filter(space=space, pk=as_int(post_id)).first()
    if post is None:
        raise errors.NotFound("No such post in this space.")
    return post


def visible_posts(*, space: Space, viewer: Member) -> QuerySet[Post]:
    """Stewards see every post; others see visible posts and their own hidden ones."""
    posts = Post.objects.filter(space=space).select_related("author")
    if viewer.role == Role.STEWARD:
        return posts
    return posts.filter(withheld_at=None).filter(Q(hidden_at=None) | Q(author=viewer))


def as_int(value: object) -> int:
    try:
        number = int(str(value))
    except (TypeError, ValueError):
        return -1
    # Out-of-range ids would make PostgreSQL raise; they name nothing anyway.
    return number if 0 < number < 2**63 else -1


def members_with_keys(space: Space) -> QuerySet[Member]:
    """The space's members, each with its keys (oldest first) in one more query for the lot."""
    return Member.objects.filter(space=space).prefetch_related(
        Prefetch("api_keys", queryset=ApiKey.objects.order_by("created_at")))
