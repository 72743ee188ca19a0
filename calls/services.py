"""Long calls' upkeep."""
from __future__ import annotations

from calls.models import LongCall
from idempotency.services import retention_cutoff


def purge_long_calls(*, dry_run: bool = False) -> int:
    """Delete long calls as old as the operations they run again (``purge_operations``): once
    its operation is gone, a poll could only run the call anew."""
    old = LongCall.objects.filter(created_at__lt=retention_cutoff())
    if dry_run:
        return old.count()
    return old.delete()[0]
