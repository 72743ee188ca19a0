"""The refusals of an Idempotency-Key's operation (SPEC §7.1)."""
from __future__ import annotations

from common.refusals import DomainError, IdempotencyKeyReused  # noqa: F401  (the runner refuses with it)



class IdempotencyInProgress(DomainError):
    code = "idempotency_in_progress"
    http_status = 409
    title = "Operation in progress"
    meaning = "The first request with this Idempotency-Key is still running: retry after `retry_after_ms`."


class IdempotencyBindingMismatch(DomainError):
    code = "idempotency_binding_mismatch"
    http_status = 409
    title = "Idempotency binding mismatch"
    meaning = "This Idempotency-Key was bound to another key generation (rotated key or changed role): use a new key."
