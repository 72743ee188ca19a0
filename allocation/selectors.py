"""What the fronts read of allocation: the duplicates it prevented."""
from __future__ import annotations

from datetime import datetime

from django.db import models

from allocation.models import ConflictCount


def conflicts_since(space_id: int, since: datetime) -> int:
    """Occupied-key refusals counted in the hours that began at or after ``since``."""
    total = ConflictCount.objects.filter(space_id=space_id, hour__gte=since).aggregate(n=models.Sum("count"))["n"]
    return total or 0
