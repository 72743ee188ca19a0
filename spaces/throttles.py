"""Rate limits shared across server processes (SPEC §3 Abuse), counted in PostgreSQL.

- Requests that fail authentication are counted per client address; past
  ``SPACES_BAD_KEY_LIMIT_PER_MINUTE`` in a minute they answer ``429 rate_limited``.
  Requests that authenticate pay nothing for it.
- A space may cap each key's requests per minute (``Space.requests_per_minute``, off by
  default); when on, one statement a request counts and decides.
- Failed admin logins are counted per client address and user name
  (``SPACES_ADMIN_LOGIN_LIMIT_PER_MINUTE``), and per address at ten times that.

A client's address is the peer's, or, when the peer is one of ``SPACES_TRUSTED_PROXIES``, the
nearest address in ``X-Forwarded-For`` that is not a trusted proxy.
"""
from __future__ import annotations

from functools import cache

from django.conf import settings
from django.db import connection

from common.refusals import RateLimited
from spaces.models import RateCounter


def client_address(request) -> str:
    peer = request.META.get("REMOTE_ADDR", "")
    trusted = set(settings.SPACES_TRUSTED_PROXIES)
    if peer not in trusted:
        return peer
    forwarded = [hop.strip() for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if hop.strip()]
    for hop in reversed(forwarded):
        if hop not in trusted:
            return hop[:128]
    return peer


@cache
def hit_sql() -> str:
    table = connection.ops.quote_name(RateCounter._meta.db_table)
    return (
        f"INSERT INTO {table} (scope, subject, window_start, count) "
        "VALUES (%s, %s, date_trunc('minute', now()), 1) "
        "ON CONFLICT (scope, subject, window_start) DO UPDATE SET count = EXCLUDED.count + "
        f"{table}.count RETURNING count, 60 - extract(second FROM now())::integer"
    )


def hit(scope: str, subject: str, limit: int) -> RateLimited | None:
    """Count one request; the refusal to give when it is over ``limit`` this minute, else None."""
    with connection.cursor() as cursor:
        cursor.execute(hit_sql(), [scope, subject[:128]])
        count, seconds_left = cursor.fetchone()
    if count <= limit:
        return None
    wait = max(1, int(seconds_left))
    return RateLimited(f"Too many requests ({scope.replace('_', ' ')}); retry in {wait} s.",
                       retry_after_ms=wait * 1000, headers={"Retry-After": str(wait)})


def over(scope: str, subject: str, limit: int) -> bool:
    """Whether ``subject`` is over ``limit`` this minute, without counting (the admin login checks first)."""
    table = connection.ops.quote_name(RateCounter._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count FROM {table} WHERE scope = %s AND subject = %s "
                       "AND window_start = date_trunc('minute', now())", [scope, subject[:128]])
        row = cursor.fetchone()
    return row is not None and row[0] >= limit


def purge_rate_counters(*, dry_run: bool = False) -> int:
    """Delete counters of minutes past (run by ``sweep``); returns how many."""
    table = connection.ops.quote_name(RateCounter._meta.db_table)
    with connection.cursor() as cursor:
        verb = "SELECT count(*) FROM" if dry_run else "DELETE FROM"
        cursor.execute(f"{verb} {table} WHERE window_start < date_trunc('minute', now())")
        return cursor.fetchone()[0] if dry_run else cursor.rowcount
