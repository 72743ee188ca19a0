"""Feed refusals (SPEC §17)."""
from __future__ import annotations

from common.refusals import DomainError


class EventsExpired(DomainError):
    code = "events_expired"
    http_status = 410
    title = "Events expired"
    meaning = ("Events after this seq were purged (the space keeps event_retention_days of them): "
               "`oldest_seq` is the oldest kept; read from there, or from the start.")
