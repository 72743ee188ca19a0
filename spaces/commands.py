"""Spaces' own commands (``commands.base``): the space's settings, join links, members and their
keys, the catalog and posts. REST, the admin and the board run the same ones; only a post is an
MCP tool, so only ``create_post`` is in the registry every front walks alike.

Three actions have no member to act as, so they are functions beside the commands, each run in
a unit of work by its front all the same: ``join`` (the link is the credential), and an
operator's ``open_space`` and ``add_member`` (the admin's, before the space has a steward). A
staff user acts in a space as its steward member (``steward_for_admin_user``)."""
from __future__ import annotations

from typing import Any

from commands.base import Command, Reply, command, validated
from common.idempotency_keys import check_idempotency_key
from spaces import errors, selectors, services
from spaces.catalog import normalize_work_item_id
from spaces.models import ApiKey, Member, MemberKind, Role, Space
from spaces.secrets import SecretAnswer, reissuer
from spaces.serializers import (
    CharterItemSerializer,
    CharterUpsertSerializer,
    IssueKeySerializer,
    JoinLinkCreateSerializer,
    JoinLinkSerializer,
    JoinSerializer,
    KeySerializer,
    MemberRoleSerializer,
    MemberSerializer,
    PostCreateSerializer,
    PostSerializer,
    SpaceSerializer,
    SpaceUpdateSerializer,
)


# --- The space ---------------------------------------------------------------------------------


def _update_space(member: Member, *, unit: Any, **changes: Any) -> Reply:
    return Reply(200, SpaceSerializer(services.update_space(space=member.space, **changes)).data)


UPDATE_SPACE = Command("update_space", Role.STEWARD, _update_space, input=SpaceUpdateSerializer)


def open_space(*, unit: Any, slug: str, name: str, **settings: Any) -> Space:
    """An operator's new space, with the settings a steward could give it (the same input)."""
    space = services.create_space(slug=slug, name=name)
    changes = validated(SpaceUpdateSerializer, settings)
    return services.update_space(space=space, **changes) if changes else space


def add_member(*, unit: Any, space: Space, role: str, name: str | None = None, kind: str = MemberKind.AGENT) -> Member:
    """An operator's new member (a member joins by a link otherwise): an agent, or a person."""
    return services.add_member(space=space, role=role, name=name, kind=kind)


def steward_for_admin_user(*, space: Space, username: str) -> Member:
    """The member a Django admin user acts as in ``space``, so admin and board actions are
    attributed in history like any steward's (created on first use)."""
    return services.steward_for_admin_user(space=space, username=username)


# --- Join links and joining --------------------------------------------------------------------


def _create_join_link(member: Member, *, unit: Any, base_url: str = "", **data: Any) -> Reply:
    """``base_url``: where the caller reached the server, so the answer's link opens there."""
    link, token = services.create_join_link(space=member.space, actor=member, **data)
    return Reply(201, {"id": link.pk, "link": f"{base_url.rstrip('/')}/v1/join?token={token}", "token": token,
                       **JoinLinkSerializer(link).data})


def _delete_join_link(member: Member, *, unit: Any, link_id: object) -> Reply:
    services.delete_join_link(link=selectors.get_join_link(space=member.space, link_id=link_id))
    return Reply(204, None)


CREATE_JOIN_LINK = Command("create_join_link", Role.STEWARD, _create_join_link, input=JoinLinkCreateSerializer)
DELETE_JOIN_LINK = Command("delete_join_link", Role.STEWARD, _delete_join_link)


def join(data: Any, *, idempotency_key: str | None) -> tuple[Reply, bool]:
    """Join through a link (SPEC §2): the reply, and whether it replays an earlier join with the
    same ``Idempotency-Key`` (checked by the runner's rule: a join has no API key for a first touch)."""
    if idempotency_key is not None:
        check_idempotency_key(idempotency_key)
    joined = services.join(**validated(JoinSerializer, data), idempotency_key=idempotency_key)
    member = joined.member
    body = {"key": joined.raw_key, "member": MemberSerializer(member).data, "space": member.space.slug,
            "role": member.role}
    return Reply(201, body), joined.replayed


# --- Members and keys --------------------------------------------------------------------------


def member_answer(member: Member) -> dict:
    return MemberSerializer(selectors.members_with_keys(member.space).get(pk=member.pk)).data


def _change_member(member: Member, *, unit: Any, member_id: object, role: str | None = None,
                   kind: str | None = None) -> Reply:
    changed = selectors.get_member(space=member.space, member_id=member_id)
    if kind is not None:
        changed = services.change_kind(member=changed, kind=kind)
    if role is not None:
        changed = services.change_role(member=changed, role=role)
    return Reply(200, member_answer(changed))


def issued_key_answer(key: ApiKey, raw: str) -> dict:
    return {"key": raw, "member": key.member_id, **KeySerializer(key).data}


def _issue_key(member: Member, *, unit: Any, member_id: object, asked_by: ApiKey | None = None,
               expires_at: Any = None) -> Reply:
    """Stewards issue keys for anyone, a member for itself. ``asked_by``: the caller's key, when
    it called with one: a key asked for by a key that expires expires no later than it
    (``services.issue_key``)."""
    holder = selectors.get_member(space=member.space, member_id=member_id)
    if holder.pk != member.pk and member.role != Role.STEWARD:
        raise errors.Forbidden("Only a steward issues keys for another member.")
    key, raw = services.issue_key(member=holder, expires_at=expires_at, asked_by=asked_by)
    return Reply(201, issued_key_answer(key, raw), SecretAnswer("api_key", ("key",), {"prefix": key.prefix}))


@reissuer("api_key")
def reissue_api_key(ref: dict) -> tuple[dict, dict]:
    """A replayed key issue: the same member gets a fresh key and the lost answer's key is revoked."""
    key, raw = services.reissue_key(prefix=ref["prefix"])
    return issued_key_answer(key, raw), {"prefix": key.prefix}


def _revoke_key(member: Member, *, unit: Any, prefix: str) -> Reply:
    """A steward revokes any key of the space, a member its own; another's key is not found."""
    key = selectors.get_key(space=member.space, prefix=prefix)
    if key.member_id != member.pk and member.role != Role.STEWARD:
        raise errors.KeyNotFound()
    services.revoke_key(key=key)
    return Reply(204, None)


CHANGE_MEMBER = Command("change_member", Role.STEWARD, _change_member, input=MemberRoleSerializer)
ISSUE_KEY = Command("issue_key", Role.READER, _issue_key, input=IssueKeySerializer)
REVOKE_KEY = Command("revoke_key", Role.READER, _revoke_key)


# --- The catalog -------------------------------------------------------------------------------


def work_item_id_of(raw: str) -> str:
    work_item_id = normalize_work_item_id(raw)
    if work_item_id is None:
        raise errors.CatalogInvalid(f"{raw!r} is not a work item id: T followed by digits, such as T1.")
    return work_item_id


def _save_charter_item(member: Member, *, unit: Any, work_item_id: str, **data: Any) -> Reply:
    item, created = services.upsert_charter_item(space=member.space, work_item_id=work_item_id_of(work_item_id), **data)
    return Reply(201 if created else 200, CharterItemSerializer(item).data)


def _delete_charter_item(member: Member, *, unit: Any, work_item_id: str) -> Reply:
    services.delete_charter_item(item=selectors.get_charter_item(space=member.space,
                                                                  work_item_id=work_item_id_of(work_item_id)))
    return Reply(204, None)


SAVE_CHARTER_ITEM = Command("save_charter_item", Role.STEWARD, _save_charter_item, input=CharterUpsertSerializer)
DELETE_CHARTER_ITEM = Command("delete_charter_item", Role.STEWARD, _delete_charter_item)


# --- Posts -------------------------------------------------------------------------------------


@command("create_post", Role.WRITER, input=PostCreateSerializer)
def create_post(member: Member, *, unit: Any, **data: Any) -> Reply:
    post = services.create_post(space=member.space, author=member, **data)
    return Reply(201, PostSerializer(post).data)


def _hide_post(member: Member, *, unit: Any, post_id: object) -> Reply:
    post = services.hide_post(post=selectors.get_post(space=member.space, post_id=post_id), actor=member)
    return Reply(200, PostSerializer(post).data)


def _withhold_post(member: Member, *, unit: Any, post_id: object) -> Reply:
    post = services.withhold_post(post=selectors.get_post(space=member.space, post_id=post_id), actor=member)
    return Reply(200, PostSerializer(post).data)


HIDE_POST = Command("hide_post", Role.WRITER, _hide_post)
WITHHOLD_POST = Command("withhold_post", Role.STEWARD, _withhold_post)
