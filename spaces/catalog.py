"""The catalog's identifiers and row validation: plain functions over plain data."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

WORK_ITEM_ID = re.compile(r"^T([0-9]+)$")  # ASCII digits only: int() would read other scripts' digits
MAX_SLOT_DIGITS = 9  # SPEC §3: a slot id is at most T + 9 digits
# The slot ids normalize_work_item_id takes, as a JSON Schema pattern for /v1/schema.
WORK_ITEM_ID_PATTERN = rf"^\s*[Tt]0*[0-9]{{1,{MAX_SLOT_DIGITS}}}\s*$"
MAX_ALIASES = 50
MAX_TITLE = 500


def normalize_work_item_id(raw: str) -> str | None:
    """SPEC §4.3.1: trim, upper-case, ``T`` + digits, leading zeros dropped (``t01`` → ``T1``).

    Returns None when ``raw`` is not of that form, or has more than 9 digits once the leading
    zeros are dropped (SPEC §3).
    """
    if not isinstance(raw, str) or len(raw) > 64:
        return None
    match = WORK_ITEM_ID.match(raw.strip().upper())
    if match is None:
        return None
    digits = match.group(1).lstrip("0") or "0"
    if len(digits) > MAX_SLOT_DIGITS:
        return None
    return f"T{digits}"


def work_item_sort_key(work_item_id: str) -> int:
    """``T2`` sorts before ``T10``."""
    return int(work_item_id[1:])


@dataclass
class CatalogRow:
    work_item_id: str
    canonical_title: str
    aliases: list[str] = field(default_factory=list)


def parse_catalog_row(raw: object) -> CatalogRow:
    """Validate one row of a catalog file or request; raises ValueError with a readable reason."""
    if not isinstance(raw, dict):
        raise ValueError("a catalog row is an object with work_item_id, canonical_title and aliases")
    work_item_id = normalize_work_item_id(raw.get("work_item_id", ""))
    if work_item_id is None:
        raise ValueError(f"work_item_id {raw.get('work_item_id')!r} is not T followed by digits")
    return CatalogRow(work_item_id, *parse_title_and_aliases(raw.get("canonical_title"), raw.get("aliases", [])))


def parse_title_and_aliases(title: object, aliases: object) -> tuple[str, list[str]]:
    if not isinstance(title, str) or not title.strip():
        raise ValueError("canonical_title is required")
    if len(title) > MAX_TITLE:
        raise ValueError(f"canonical_title is longer than {MAX_TITLE} characters")
    if aliases is None:
        aliases = []
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise ValueError("aliases is a list of strings")
    cleaned = [a.strip() for a in aliases if a.strip()]
    if len(cleaned) > MAX_ALIASES:
        raise ValueError(f"at most {MAX_ALIASES} aliases a row")
    if any(len(a) > MAX_TITLE for a in cleaned):
        raise ValueError(f"an alias is longer than {MAX_TITLE} characters")
    return title.strip(), cleaned
