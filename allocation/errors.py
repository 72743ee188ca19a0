"""Allocation refusals (SPEC §4)."""
from __future__ import annotations

from common.refusals import DomainError

RESERVED_RETRY_AFTER_MS = 200


class AllocationConflict(DomainError):
    """Another intent owns the conflict key: nothing was written (SPEC §4.6)."""

    error = "allocation_conflict"
    http_status = 409
    title = "Allocation conflict"


class ConflictKeyOccupied(AllocationConflict):
    code = "conflict_key_occupied"
    meaning = "A live task (or note) already holds this conflict key: work on the `winner` instead of creating it again."


class ConflictKeyReserved(AllocationConflict):
    code = "conflict_key_reserved"
    meaning = "Another request is creating this work right now: retry after `retry_after_ms`, it will then name the winner."


class ConflictKeyHeld(AllocationConflict):
    code = "conflict_key_held"
    meaning = "A steward holds this catalog slot: no new task may take it until the hold is released."


class InvalidWorkItemId(DomainError):
    code = "invalid_work_item_id"
    http_status = 422
    title = "Invalid work item id"
    meaning = "`work_item_id` is T followed by digits (t01 reads as T1); `valid_work_item_ids` lists the catalog."


class UnknownWorkItem(DomainError):
    code = "unknown_work_item"
    http_status = 422
    title = "Unknown work item"
    meaning = "`work_item_id` is not a row of this space's catalog; `valid_work_item_ids` lists the catalog."
