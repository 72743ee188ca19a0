"""What an ``Idempotency-Key`` may be (SPEC §7.1): one rule for every front and every route,
the runner's and ``POST /v1/join``'s alike."""
from __future__ import annotations

import unicodedata

from common.refusals import InvalidRequest

MAX_KEY_LENGTH = 255


def check_idempotency_key(key: str) -> None:
    """An Idempotency-Key is 1 to 255 printable characters, whichever front it came through."""
    try:
        key.encode("utf-8")
        # Unlike a title's, a key's tab is no layout: every control character is refused.
        printable = not any(unicodedata.category(c) == "Cc" for c in key)
    except UnicodeEncodeError:  # a lone surrogate
        printable = False
    if not key.strip() or len(key) > MAX_KEY_LENGTH or not printable:
        raise InvalidRequest(f"Idempotency-Key must be 1 to {MAX_KEY_LENGTH} printable characters.",
                             fields={"Idempotency-Key": [f"1 to {MAX_KEY_LENGTH} printable characters."]})
