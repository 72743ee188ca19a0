"""The cost commands (SPEC §19), the same for every front."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone as dt_timezone

from django.utils import timezone
from rest_framework import serializers

from common.refusals import InvalidRequest
from costs import selectors
from costs.selectors import month_start
from commands.base import Reply, command
from spaces.models import Member, Role
from spaces.serializers import StrictInputSerializer

MAX_PERIOD = timedelta(days=366)


class CostsQuerySerializer(StrictInputSerializer):
    """``GET …/costs?since=&until=&group_by=``: a period (default: this calendar month, UTC)."""

    since = serializers.DateTimeField(required=False, default=None)
    until = serializers.DateTimeField(required=False, default=None)
    group_by = serializers.ChoiceField(choices=selectors.GROUPS, required=False, default="member")


@command("space_costs", Role.READER, input=CostsQuerySerializer, mutates=False)
def space_costs(member: Member, *, unit: None, since: datetime | None, until: datetime | None,
                group_by: str) -> Reply:
    """What the space spent in a period, per group, and the cost per accepted outcome."""
    now = timezone.now()
    until = until or now
    since = since or month_start(now)
    if since >= until or until - since > MAX_PERIOD:
        raise InvalidRequest("The period is `since` before `until`, at most 366 days.",
                             fields={"since": ["Must be before until, at most 366 days before it."]})
    groups = selectors.space_costs(member.space_id, since=since, until=until, group_by=group_by)
    outcome = selectors.per_accepted_outcome(member.space_id, since=since, until=until)
    return Reply(200, {
        "since": since.astimezone(dt_timezone.utc).isoformat().replace("+00:00", "Z"),
        "until": until.astimezone(dt_timezone.utc).isoformat().replace("+00:00", "Z"),
        "group_by": group_by, "groups": groups,
        **selectors.period_spend(member.space_id, since=since, until=until),
        "accepted": outcome["accepted"], "per_accepted_usd": outcome["per_accepted_usd"],
        "budget_usd": float(member.space.budget_usd) if member.space.budget_usd is not None else None,
    })
