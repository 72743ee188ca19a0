"""Writes for spaces, members, keys, join links, the catalog and posts.

Every front (API, admin, commands) calls these; none of them writes these models itself.
"""
from __future__ import annotations

import re
import secrets
import string
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from django.db import IntegrityError, connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from events import feed
from spaces import errors, sql
from spaces.catalog import CatalogRow, parse_title_and_aliases, work_item_sort_key
from spaces.fingerprints import request_fingerprint
from spaces.key_lookup import KEY_PREFIX_LENGTH, format_key, hash_secret
from spaces.models import (
    SPACE_SETTINGS,
    ApiKey,
    CatalogChange,
    CharterItem,
    JoinLink,
    JoinRedemption,
    KeyPrefix,
    Member,
    MemberKind,
    Post,
    Role,
    Space,
)

KEY_PREFIX_ALPHABET = string.ascii_lowercase + string.digits
MAX_LIVE_KEYS_PER_MEMBER = 2  # SPEC §2: two live keys while rotating


# --- Keys ------------------------------------------------------------------------------------


def issue_key(*, member: Member, expires_at: datetime | None = None,
              asked_by: ApiKey | None = None) -> tuple[ApiKey, str]:
    """Create a live key for ``member``; returns the row and the raw key (shown once).

    A key issued at the request of a key that expires expires no later than that key (a
    key cannot outlive itself by minting another).

    A member holds at most two live keys (rotation): issuing a third revokes the oldest.
    The new key's binding generation is above every earlier key's (SPEC §2).
    """
    if asked_by is not None and asked_by.expires_at is not None:
        expires_at = asked_by.expires_at if expires_at is None else min(expires_at, asked_by.expires_at)
    with transaction.atomic():
        # Lock the member row so two concurrent issues cannot both see one live key.
        member = Member.objects.select_for_update().get(pk=member.pk)
        now = timezone.now()
        keys = list(member.api_keys.order_by("created_at", "pk"))
        live = list(member.api_keys.filter(ApiKey.live(now)).order_by("created_at", "pk"))
        generation = max((k.generation for k in keys), default=0) + 1
        for old in live[: max(0, len(live) - (MAX_LIVE_KEYS_PER_MEMBER - 1))]:
            ApiKey.objects.filter(pk=old.pk, revoked_at=None).update(revoked_at=now)
        secret = secrets.token_hex(16)
        while True:
            prefix = "".join(secrets.choice(KEY_PREFIX_ALPHABET) for _ in range(KEY_PREFIX_LENGTH))
            try:
                with transaction.atomic():
                    KeyPrefix.objects.create(prefix=prefix, space_id=member.space_id)  # unique across spaces
                    key = ApiKey.objects.create(
                        space_id=member.space_id,
                        member=member,
                        prefix=prefix,
                        key_hash=hash_secret(secret),
                        generation=generation,
                        expires_at=expires_at,
                    )
                break
            except IntegrityError:  # a prefix collision: astronomically rare, try another
                continue
        feed.record(space_id=member.space_id, type="key.issued",
                    data={"member": member.pk, "prefix": prefix, "expires_at": expires_at.isoformat() if expires_at else None})
    return key, format_key(prefix, secret)


def reissue_key(*, prefix: str) -> tuple[ApiKey, str]:
    """Revoke the key with ``prefix`` and issue its member a fresh one with the same expiry
    (the replay of an answer that carried a key, SPEC §7.1)."""
    with transaction.atomic():
        old = ApiKey.objects.select_related("member").get(prefix=prefix)
        ApiKey.objects.filter(pk=old.pk, revoked_at=None).update(revoked_at=timezone.now())
        return issue_key(member=old.member, expires_at=old.expires_at)


def revoke_key(*, key: ApiKey) -> ApiKey:
    with transaction.atomic():
        if ApiKey.objects.filter(pk=key.pk, revoked_at=None).update(revoked_at=timezone.now()):
            feed.record(space_id=key.space_id, type="key.revoked", data={"member": key.member_id, "prefix": key.prefix})
    key.refresh_from_db()
    return key


# --- Spaces and members ----------------------------------------------------------------------


SLUG = re.compile(r"^[a-z0-9-]{1,64}$")  # SPEC §3


def create_space(*, slug: str, name: str) -> Space:
    if not isinstance(slug, str) or not SLUG.match(slug):
        raise errors.InvalidRequest(f"{slug!r} is not a slug: 1 to 64 characters of a-z, 0-9 and -.",
                                    fields={"slug": ["1 to 64 characters of a-z, 0-9 and -."]})
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise errors.InvalidRequest("A space needs a name of 1 to 200 characters.",
                                    fields={"name": ["1 to 200 characters."]})
    try:
        with transaction.atomic():
            return Space.objects.create(slug=slug, name=name)
    except IntegrityError:
        raise errors.SpaceExists(f"A space with slug {slug!r} already exists.", slug=slug) from None


def update_space(*, space: Space, **changes: object) -> Space:
    unknown = set(changes) - set(SPACE_SETTINGS)
    if unknown:
        raise errors.InvalidRequest("Unknown settings.", fields={k: ["Not a space setting."] for k in unknown})
    if not changes:
        return space
    try:
        with transaction.atomic():
            Space.objects.filter(pk=space.pk).update(**changes)
            shown = {k: float(v) if isinstance(v, Decimal) else v for k, v in changes.items()}  # JSON numbers
            feed.record(space_id=space.pk, type="space.settings_changed", data={"changes": shown})
    except IntegrityError:
        # The check constraints are the authority; the serializer's ranges only word the message.
        raise errors.InvalidRequest("A setting is out of range.", fields={k: ["Out of range."] for k in changes}) from None
    space.refresh_from_db()
    return space


def generated_member_name(space: Space, role: str) -> str:
    return f"{role}-{secrets.token_hex(3)}"


def add_member(*, space: Space, role: str, name: str | None = None, kind: str = MemberKind.AGENT) -> Member:
    if role not in Role.values:
        raise errors.RoleInvalid(f"Role {role!r} is not one of {', '.join(Role.values)}.")
    for _ in range(5):
        try:
            with transaction.atomic():
                member = Member.objects.create(space=space, role=role, kind=kind,
                                               name=name or generated_member_name(space, role))
                feed.record(space_id=space.pk, type="member.added",
                            data={"member": member.pk, "name": member.name, "role": role})
                return member
        except IntegrityError:
            if name:
                raise errors.InvalidRequest(
                    f"A member named {name!r} already exists in this space.", fields={"name": ["Already taken."]}
                ) from None
    raise RuntimeError("could not generate a unique member name")


def change_role(*, member: Member, role: str) -> Member:
    """Change ``member``'s role; every key of theirs moves to a new binding generation (SPEC §2)."""
    if role not in Role.values:
        raise errors.RoleInvalid(f"Role {role!r} is not one of {', '.join(Role.values)}.")
    with transaction.atomic():
        # Lock every steward of the space in pk order so two demotions cannot leave none.
        stewards = list(
            Member.objects.select_for_update().filter(space_id=member.space_id, role=Role.STEWARD).order_by("pk")
        )
        member = Member.objects.select_for_update().get(pk=member.pk)
        if member.role == role:
            return member
        if member.role == Role.STEWARD and len(stewards) <= 1:
            raise errors.LastSteward()
        member.role = role
        member.save(update_fields=["role"])
        ApiKey.objects.filter(member=member).update(generation=F("generation") + 1)
        feed.record(space_id=member.space_id, type="member.role_changed", data={"member": member.pk, "role": role})
    return member


def change_kind(*, member: Member, kind: str) -> Member:
    """An agent or a person (SPEC §21): what a person's check and the approval setting read."""
    with transaction.atomic():
        if Member.objects.filter(pk=member.pk).exclude(kind=kind).update(kind=kind):
            feed.record(space_id=member.space_id, type="member.kind_changed", data={"member": member.pk, "kind": kind})
    member.refresh_from_db()
    return member


# --- Join links ------------------------------------------------------------------------------


def create_join_link(
    *, space: Space, role: str, actor: Member | None, expires_at: datetime | None = None, max_uses: int | None = None
) -> tuple[JoinLink, str]:
    if role not in Role.values:
        raise errors.RoleInvalid(f"Role {role!r} is not one of {', '.join(Role.values)}.")
    if expires_at is not None and expires_at <= timezone.now():
        raise errors.InvalidRequest("A join link's expiry must be in the future.",
                                    fields={"expires_at": ["Must be in the future."]})
    token = secrets.token_urlsafe(24)
    link = JoinLink.objects.create(
        space=space, token_hash=hash_secret(token), role=role, expires_at=expires_at, max_uses=max_uses, created_by=actor
    )
    return link, token


def token_from_link(link_or_token: str) -> str:
    """Accept a bare token or any URL that ends in it (``…/join/<token>`` or ``?token=<token>``)."""
    text = link_or_token.strip()
    if "token=" in text:
        text = text.split("token=", 1)[1].split("&", 1)[0]
    return text.rstrip("/").rsplit("/", 1)[-1]


@dataclass(frozen=True)
class Joined:
    member: Member
    key: ApiKey
    raw_key: str
    replayed: bool = False


def join(*, link: str, name: str | None = None, idempotency_key: str | None = None) -> Joined:
    """Join a space through a link (SPEC §2). With ``idempotency_key`` a retry answers for the
    same member with a fresh key and revokes the one the earlier answer carried, without
    using the link again; the link's row lock orders concurrent retries."""
    token = token_from_link(link)
    now = timezone.now()
    fingerprint = request_fingerprint("POST", "/v1/join", {"link": token, "name": name})
    with transaction.atomic():
        join_link = JoinLink.objects.select_for_update().filter(token_hash=hash_secret(token)).first()
        if join_link is None:
            raise errors.JoinLinkInvalid()
        earlier = None if idempotency_key is None else JoinRedemption.objects.filter(
            space_id=join_link.space_id, link=join_link, key=idempotency_key).select_related("member").first()
        if earlier is not None:
            if earlier.fingerprint != fingerprint:
                raise errors.IdempotencyKeyReused(
                    f"Idempotency-Key {idempotency_key!r} was first used to join with another name; use a new key.")
            key, raw = reissue_key(prefix=earlier.answered_key_prefix)
            JoinRedemption.objects.filter(pk=earlier.pk).update(answered_key_prefix=key.prefix)
            return Joined(earlier.member, key, raw, replayed=True)
        if join_link.expires_at is not None and join_link.expires_at <= now:
            raise errors.JoinLinkInvalid()
        # Compare-and-set on uses: the row lock above plus this predicate hold max_uses.
        used = JoinLink.objects.filter(pk=join_link.pk).filter(
            Q(max_uses=None) | Q(uses__lt=F("max_uses"))
        ).update(uses=F("uses") + 1)
        if used != 1:
            raise errors.JoinLinkInvalid("This join link has no uses left.")
        member = add_member(space=join_link.space, role=join_link.role, name=name)
        key, raw = issue_key(member=member)
        if idempotency_key is not None:
            JoinRedemption.objects.create(space_id=join_link.space_id, link=join_link, key=idempotency_key,
                                          fingerprint=fingerprint, member=member, answered_key_prefix=key.prefix)
    return Joined(member, key, raw)


def delete_join_link(*, link: JoinLink) -> None:
    link.delete()


# --- Catalog ---------------------------------------------------------------------------------


# Past this many rows one catalog change is logged as "rebuild" rather than row by row.
MAX_LOGGED_CHANGES = 1000


def bump_catalog_version(space: Space, changed: list[str]) -> int:
    """The next catalog version, with the rows it changed (``CatalogChange``), in the caller's
    transaction: bind indexes catch up by those rows alone."""
    with connection.cursor() as cursor:
        cursor.execute(sql.NEXT_CATALOG_VERSION, [space.pk])
        version = cursor.fetchone()[0]
    if len(changed) > MAX_LOGGED_CHANGES:
        changed = [CatalogChange.EVERYTHING]
    CatalogChange.objects.bulk_create([CatalogChange(space=space, version=version, work_item_id=wid)
                                       for wid in sorted(set(changed))])
    return version


def purge_catalog_changes(*, dry_run: bool = False) -> int:
    """Changes older than a day: a process that has not caught up by then rebuilds its index."""
    old = CatalogChange.objects.filter(created_at__lt=timezone.now() - timedelta(days=1))
    return old.count() if dry_run else old.delete()[0]


def upsert_charter_item(*, space: Space, work_item_id: str, canonical_title: str, aliases: list[str]) -> tuple[CharterItem, bool]:
    try:
        canonical_title, aliases = parse_title_and_aliases(canonical_title, aliases)
    except ValueError as exc:
        raise errors.CatalogInvalid(str(exc)) from None
    with transaction.atomic():
        item, created = CharterItem.objects.update_or_create(
            space=space,
            work_item_id=work_item_id,
            defaults={
                "canonical_title": canonical_title,
                "aliases": aliases,
                "position": work_item_sort_key(work_item_id),
                "updated_at": timezone.now(),
            },
        )
        bump_catalog_version(space, [work_item_id])
        feed.record(space_id=space.pk, type="catalog.item_saved",
                    data={"work_item_id": work_item_id, "canonical_title": canonical_title, "aliases": aliases,
                          "created": created})
    return item, created


def delete_charter_item(*, item: CharterItem) -> None:
    with transaction.atomic():
        space = item.space
        item.delete()
        bump_catalog_version(space, [item.work_item_id])
        feed.record(space_id=space.pk, type="catalog.item_deleted", data={"work_item_id": item.work_item_id})


def import_catalog(*, space: Space, rows: list[CatalogRow], batch_size: int = 5000, progress=None) -> int:
    """Upsert ``rows`` by work_item_id in batches (one INSERT … ON CONFLICT a batch)."""
    now = timezone.now()
    done = 0
    with transaction.atomic():
        for start in range(0, len(rows), batch_size):
            batch = rows[start : start + batch_size]
            CharterItem.objects.bulk_create(
                [
                    CharterItem(
                        space=space,
                        work_item_id=row.work_item_id,
                        position=work_item_sort_key(row.work_item_id),
                        canonical_title=row.canonical_title,
                        aliases=row.aliases,
                        updated_at=now,
                    )
                    for row in batch
                ],
                update_conflicts=True,
                unique_fields=["space", "work_item_id"],
                update_fields=["canonical_title", "aliases", "position", "updated_at"],
            )
            done += len(batch)
            if progress is not None:
                progress(done, len(rows))
        bump_catalog_version(space, [row.work_item_id for row in rows])
        feed.record(space_id=space.pk, type="catalog.imported", data={"rows": done})
    return done


# --- Posts -----------------------------------------------------------------------------------


def create_post(*, space: Space, author: Member, body: str, title: str = "") -> Post:
    return Post.objects.create(space=space, author=author, body=body, title=title or "")


def hide_post(*, post: Post, actor: Member) -> Post:
    if post.author_id != actor.pk:
        raise errors.NotPostAuthor()
    Post.objects.filter(pk=post.pk, hidden_at=None).update(hidden_at=timezone.now())
    post.refresh_from_db()
    return post


def withhold_post(*, post: Post, actor: Member) -> Post:
    Post.objects.filter(pk=post.pk, withheld_at=None).update(withheld_at=timezone.now(), withheld_by=actor)
    post.refresh_from_db()
    return post


def steward_for_admin_user(*, space: Space, username: str) -> Member:
    """The member a Django admin user acts as in ``space``, so admin actions are attributed
    in history like any steward's (created on first use)."""
    name = f"admin:{username}"[:100]
    # SPEC §21: a staff user on the board acts as a person member of the space.
    member, _ = Member.objects.get_or_create(space=space, name=name,
                                             defaults={"role": Role.STEWARD, "kind": MemberKind.PERSON})
    return member
