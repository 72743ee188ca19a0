"""The one read every authenticated request makes: an API key with its member and space.

The key's read names its space (SPEC §11: it goes to one shard under sharding by space), found
by the key's public prefix in the global lookup ``KeyPrefix``. A prefix never changes space,
so each process keeps what it read (for speed only: a key read that finds nothing forgets the
prefix's space, and the next request reads it again).

It runs on every request, so its SQL (``spaces.sql.lookup_key``) is built once from the models'
metadata instead of being compiled by the ORM each time (the compilation cost more than the
query), and the unchanging text lets psycopg keep it as a prepared statement.
"""
from __future__ import annotations

import hashlib
from datetime import timedelta
from functools import cache

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone as django_timezone

from common.rows import instance
from spaces import sql
from spaces.models import ApiKey, KeyPrefix

KEY_PREFIX_LENGTH = 12
LAST_USED_RESOLUTION = timedelta(minutes=1)  # write last_used_at at most once a minute a key


def valid_key_params(space_id: int, prefix: str, key_hash: str) -> list:
    values = {"space": space_id, "prefix": prefix, "key_hash": key_hash, "now": django_timezone.now()}
    return [values[name] for name in sql.valid_key()[1]]


SPACES_OF_PREFIXES: dict[str, int] = {}  # this process's reads of KeyPrefix
MAX_PREFIXES_KEPT = 10_000


def space_of_prefix(prefix: str) -> int | None:
    """The space of the key with this prefix (None: no such key), from this process's reads."""
    space = SPACES_OF_PREFIXES.get(prefix)
    if space is None:
        space = KeyPrefix.objects.filter(prefix=prefix).values_list("space_id", flat=True).first()
        if space is not None:
            if len(SPACES_OF_PREFIXES) >= MAX_PREFIXES_KEPT:
                SPACES_OF_PREFIXES.clear()
            SPACES_OF_PREFIXES[prefix] = space
    return space


def forget_prefix(prefix: str) -> None:
    """A key read with this prefix found nothing: its space is read again next time."""
    SPACES_OF_PREFIXES.pop(prefix, None)


@cache
def key_row_width() -> int:
    return sum(len(model._meta.concrete_fields) for model, _ in sql.JOINED)


def valid_key(prefix: str, key_hash: str) -> ApiKey | None:
    """The valid key with this prefix and secret hash, its ``member`` and ``space`` loaded; None
    when there is none (unknown, wrong secret, revoked or expired)."""
    space_id = space_of_prefix(prefix)
    if space_id is None:
        return None  # no key has this prefix
    with connection.cursor() as cursor:
        cursor.execute(sql.lookup_key(), valid_key_params(space_id, prefix, key_hash))
        row = cursor.fetchone()
    if row is None:
        forget_prefix(prefix)
        return None
    return key_from_row(row)


def key_from_row(row: tuple) -> ApiKey:
    """The key, member and space from the first ``key_row_width()`` values of ``row``."""
    objects, start = [], 0
    for model, _ in sql.JOINED:
        width = len(model._meta.concrete_fields)
        objects.append(instance(model, row[start:start + width]))
        start += width
    key, member, space = objects
    member.space = space
    key.member, key.space = member, space
    return key


def hash_secret(secret: str) -> str:
    # Keys are 128-bit random secrets, so a fast hash is enough (no password stretching).
    return hashlib.sha256(secret.encode()).hexdigest()


def format_key(prefix: str, secret: str) -> str:
    return f"sk_{prefix}_{secret}"


def split_key(raw: str) -> tuple[str, str] | None:
    if not raw.startswith("sk_") or len(raw) < 3 + KEY_PREFIX_LENGTH + 2:
        return None
    prefix, sep, secret = raw[3:].partition("_")
    if not sep or len(prefix) != KEY_PREFIX_LENGTH or not secret:
        return None
    return prefix, secret


def authenticate_key(raw: str) -> ApiKey | None:
    """The live key ``raw`` names, with its member and space loaded; None if not valid."""
    parts = split_key(raw.strip())
    if parts is None:
        return None
    prefix, secret = parts
    key = valid_key(prefix, hash_secret(secret))
    return None if key is None else noted_use(key)


def noted_use(key: ApiKey) -> ApiKey:
    """``key``, a valid key just used, with its last use dated (throttled to keep reads cheap)."""
    now = django_timezone.now()
    if key.last_used_at is None or key.last_used_at < now - LAST_USED_RESOLUTION:
        # Compare-and-set so concurrent requests write it once.
        # SKIP LOCKED: a request never waits for another one's open transaction to note the use.
        stale = ApiKey.objects.filter(space_id=key.space_id, pk=key.pk).filter(
            Q(last_used_at=None) | Q(last_used_at__lt=now - LAST_USED_RESOLUTION))
        with transaction.atomic():
            ApiKey.objects.filter(space_id=key.space_id, pk__in=stale.select_for_update(skip_locked=True).values("pk")
                                  ).update(last_used_at=now)
    return key
