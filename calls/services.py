"""Long calls' upkeep."""
from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from calls.models import LongCall


def purge_long_calls(*, dry_run: bool = False) -> int:
    """Delete long calls as old as the operations they run again (``purge_operations``): once
    its operation is gone, a poll could only run the call anew."""
    cutoff = timezone.now() - timedelta(hours=settings.SPACES_OPERATION_RETENTION_HOURS)
    old = LongCall.objects.filter(created_at__lt=cutoff)
    if dry_run:
        return old.count()
    return old.delete()[0]
