"""Conflict keys (SPEC §4.1–§4.2, §4.8): how an intent names the work it would create."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from allocation.binding import normalize_note_body, normalize_title


@dataclass(frozen=True)
class ConflictKey:
    kind: str
    target: str
    delivery_mode: str

    def as_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "target": self.target, "delivery_mode": self.delivery_mode}


def task_target(space_slug: str, *, work_item_id: str | None, title: str) -> str:
    if work_item_id is not None:
        return f"task:{space_slug}:slot:{work_item_id}"
    return f"task:{space_slug}:{normalize_title(title)}"


def note_target(space_slug: str, *, task_number: int, criterion: int | None, member_id: int, body: str) -> str:
    digest = hashlib.sha256(normalize_note_body(body).encode()).hexdigest()[:16]
    criterion_part = "none" if criterion is None else str(criterion)
    return f"note:{space_slug}:task:{task_number}:criterion:{criterion_part}:principal:{member_id}:body:{digest}"


def payload_sha256(payload: dict) -> str:
    """SHA-256 of the canonical JSON payload (sorted keys, no spaces), SPEC §4.5."""
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()
