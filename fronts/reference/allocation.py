"""The ``allocation`` section of GET /v1/reference, built from the constants the code uses."""
from __future__ import annotations

from allocation import errors
from allocation.binding import (
    BIND_MARGIN,
    BIND_THRESHOLD,
    MAX_SCORES,
    STOPWORDS,
    format_fraction,
)
from allocation.models import TASK_DELIVERY_MODES, ConflictKind
from spaces.models import Space
from fronts.reference import register_section


@register_section("allocation")
def allocation_section() -> dict:
    window = Space._meta.get_field("allocation_window_seconds").default
    return {
        "summary": "Racing agents create each piece of work once: every create intent names a conflict key, "
        "and only one live task may hold a key.",
        "conflict_key": {
            "fields": ["kind", "target", "delivery_mode"],
            "kinds": list(ConflictKind.values),
            "task_delivery_modes": list(TASK_DELIVERY_MODES),
            "slot_target": "task:<space>:slot:<work_item_id>",
            "title_target": "task:<space>:<normalized title> (NFC, trimmed, white space collapsed, case folded)",
            "note_target": "note:<space>:task:<n>:criterion:<c|none>:principal:<member>:"
                           "body:<sha256(normalize_note_body(body))[:16]>",
            "normalize_note_body": "NFC, trim, collapse each run of white space to one space; case kept",
        },
        "binding": {
            "explicit": "work_item_id T + digits (t01 reads as T1) must be a catalog row, else 422 "
            "invalid_work_item_id / unknown_work_item",
            "tokens": "NFC, case fold, non-word runs to spaces, split; stopwords dropped",
            "stopwords": sorted(STOPWORDS),
            "score": "Jaccard of the title's tokens and the slot's bag (canonical title ∪ aliases), exact fractions",
            "threshold": format_fraction(BIND_THRESHOLD),
            "margin": format_fraction(BIND_MARGIN),
            "rule": "bind the unique best slot when score ≥ threshold and score − second best ≥ margin; "
            "otherwise fall back to the title",
            "scores_listed": MAX_SCORES,
        },
        "reserve_then_mutate": [
            "occupied key → 409 conflict_key_occupied, outcome redirect, winner {type: task, id, status}: "
            "work on the winner",
            "key reserved by another intent → 409 conflict_key_reserved, outcome idle, retry after "
            f"{errors.RESERVED_RETRY_AFTER_MS} ms",
            "slot held by a steward → 409 conflict_key_held",
            f"else a reservation for the space's allocation window (default {window} s), then the task",
        ],
        "occupancy": "open, claimed, assigned and in_review tasks occupy their key; done, rejected, withdrawn and "
        "superseded tasks free it",
        "idempotency": "send Idempotency-Key on a POST: a retry returns the first answer (Idempotent-Replayed: true)",
    }


@register_section("settlement")
def settlement_section() -> dict:
    from django.conf import settings

    from idempotency.settlement import WARNINGS_PER_RECORD_PER_DAY

    return {
        "summary": "Every POST may carry an Idempotency-Key: the first touch stores (key, request fingerprint, "
        "key generation); retries replay the first answer or run again only when the outcome was transient.",
        "idempotency": [
            "same key and request, completed: the stored status and body again, with Idempotent-Replayed: true",
            "same key, another method, path or body: 422 idempotency_key_reused",
            "same key after the API key was rotated or the role changed: 409 idempotency_binding_mismatch",
            "same key while the first request runs: 409 idempotency_in_progress with retry_after_ms",
            "same key after a transient outcome (409 conflict_key_reserved, 429, 5xx) or an expired lease: runs again",
        ],
        "lease_seconds": settings.SPACES_OPERATION_LEASE_SECONDS,
        "retention_hours": settings.SPACES_OPERATION_RETENTION_HOURS,
        "settlement": [
            "reports are stored apart and never overwrite the record; one settlement function decides",
            "a report whose tuple or fencing token (lease epoch) does not match is quarantined",
            "unknown < in_progress (only under a live lease); after a lease expires a late in_progress does not "
            "resurrect the operation",
            "a matching success dominates unknown in either order; between two matching terminals the first wins",
            f"tuple_mismatch_quarantined warnings: one per (fingerprint, generation) pair a record, at most "
            f"{WARNINGS_PER_RECORD_PER_DAY} a record per 24 hours",
        ],
        "exports": "POST …/exports (steward) answers 202; a worker writes the export and settles it; "
        "POST …/exports/{id}/share works only once it completed (else 409 export_not_completed); "
        "GET /v1/shares/{token} serves it without a key",
    }
