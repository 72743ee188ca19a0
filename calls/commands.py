"""Long calls' commands (SPEC §23): follow one, cancel it, set aside what it asked."""
from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone

from calls.models import LongCall
from calls.selectors import get_call
from commands.base import Reply, command
from commands.unit import UnitOfWork
from spaces.models import Member, Role


def call_body(call: LongCall) -> dict[str, Any]:
    return {"id": str(call.id), "tool": call.tool, "deadline": call.deadline.isoformat(),
            "cancelled": call.cancelled_at is not None, "created_at": call.created_at.isoformat(),
            "updated_at": call.updated_at.isoformat()}


@command("follow_call", Role.READER)  # run after the call itself, whose command checked its role
def follow_call(member: Member, *, unit: UnitOfWork, tool: str, arguments: dict[str, Any], key: str,
                wait: float) -> Reply:
    """The call ``tool(arguments)`` under the idempotency key ``key``, followed until ``wait``
    seconds from now; the same key again follows the same call (a retried tools/call)."""
    call, created = LongCall.objects.get_or_create(
        space_id=member.space_id, member=member, idempotency_key=key,
        defaults={"tool": tool, "arguments": arguments,
                  "deadline": timezone.now() + timedelta(seconds=wait)})
    return Reply(201 if created else 200, call_body(call))


@command("cancel_call", Role.READER)
def cancel_call(member: Member, *, unit: UnitOfWork, call: object) -> Reply:
    """The caller gives up following ``call``: its next poll answers ``cancelled``. A call that
    ended before stays ended (its outcome is the operation's)."""
    found = get_call(member, call, lock=True)
    if found.cancelled_at is None:
        found.cancelled_at = found.updated_at = timezone.now()
        found.save(update_fields=["cancelled_at", "updated_at"])
    return Reply(200, call_body(found))


@command("set_aside_inputs", Role.READER)
def set_aside_inputs(member: Member, *, unit: UnitOfWork, call: object, keys: list[str]) -> Reply:
    """Input requests of ``call`` its caller answered or declined: never listed to it again."""
    found = get_call(member, call, lock=True)
    fresh = [key for key in keys if key not in found.responded]
    if fresh:
        found.responded = [*found.responded, *fresh][-200:]
        found.updated_at = timezone.now()
        found.save(update_fields=["responded", "updated_at"])
    return Reply(200, call_body(found))
