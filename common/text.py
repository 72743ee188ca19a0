"""Rules about text that more than one app applies."""
from __future__ import annotations

import unicodedata


def has_control_characters(text: str) -> bool:
    """Control characters other than tab and newline: SPEC §4.2 refuses such a title."""
    return any(unicodedata.category(c) == "Cc" and c not in "\t\n" for c in text)
