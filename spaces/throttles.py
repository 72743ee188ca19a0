"""Rate limits shared across server processes (SPEC §3 Abuse), counted in PostgreSQL.

- Requests whose key fails authentication are counted per client address; past
  ``SPACES_BAD_KEY_LIMIT_PER_MINUTE`` in a minute they answer ``429 rate_limited``, and each
  process remembers that verdict until the minute ends (``Verdicts``), so they cost no
  statement. A malformed key costs none at all: it is refused before any. Requests that
  authenticate pay nothing for it.
- A space may cap each key's requests per minute (``Space.requests_per_minute``, off by
  default); when on, one statement a request counts and decides.
- Failed admin logins are counted per client address and user name
  (``SPACES_ADMIN_LOGIN_LIMIT_PER_MINUTE``), and per address at ten times that.

Who a client is (its address, from the request) is the fronts' to say: ``fronts.client_address``.
"""
from __future__ import annotations

import threading
import time

from django.db import connection

from common.refusals import RateLimited
from spaces import sql


class Verdicts:
    """What this process learnt from the shared counters: a subject over its limit stays over
    until its minute ends (within a window the count only grows), so the memo is never wrong,
    and a subject remembered over is refused without a statement. For speed only: the counter
    in PostgreSQL decides."""

    def __init__(self) -> None:
        self.until: dict[tuple[str, str], float] = {}
        self.lock = threading.Lock()

    def seconds_left(self, scope: str, subject: str) -> int | None:
        with self.lock:
            until = self.until.get((scope, subject))
            if until is None:
                return None
            left = until - time.time()
            if left <= 0:
                del self.until[(scope, subject)]
                return None
            return max(1, int(left))

    def remember(self, scope: str, subject: str, seconds_left: int) -> None:
        with self.lock:
            if len(self.until) > 100_000:  # a flood of addresses: start again rather than grow
                self.until.clear()
            self.until[(scope, subject)] = time.time() + seconds_left

    def clear(self) -> None:
        with self.lock:
            self.until.clear()


VERDICTS = Verdicts()


def seconds_to_minute_end() -> int:
    """Until the current counting window ends (windows are clock minutes, as the database's)."""
    return max(1, 60 - int(time.time() % 60))


def refusal(scope: str, wait: int) -> RateLimited:
    return RateLimited(f"Too many requests ({scope.replace('_', ' ')}); retry in {wait} s.",
                       retry_after_ms=wait * 1000, headers={"Retry-After": str(wait)})


def hit(scope: str, subject: str, limit: int) -> RateLimited | None:
    """Count one request; the refusal to give when it is over ``limit`` this minute, else None.
    A subject this process already saw over its limit this minute is refused without counting."""
    remembered = VERDICTS.seconds_left(scope, subject[:128])
    if remembered is not None:
        return refusal(scope, remembered)
    with connection.cursor() as cursor:
        cursor.execute(sql.count_hit(), [scope, subject[:128]])
        count, seconds_left = cursor.fetchone()
    if count <= limit:
        return None
    wait = max(1, int(seconds_left))
    VERDICTS.remember(scope, subject[:128], wait)
    return refusal(scope, wait)


def over(scope: str, subject: str, limit: int) -> bool:
    """Whether ``subject`` is over ``limit`` this minute, without counting (the admin login checks first)."""
    with connection.cursor() as cursor:
        cursor.execute(sql.COUNT_THIS_MINUTE, [scope, subject[:128]])
        row = cursor.fetchone()
    return row is not None and row[0] >= limit


def purge_rate_counters(*, dry_run: bool = False) -> int:
    """Delete counters of minutes past (run by ``sweep``); returns how many."""
    with connection.cursor() as cursor:
        cursor.execute(sql.past_counters(dry_run=dry_run))
        return cursor.fetchone()[0] if dry_run else cursor.rowcount
