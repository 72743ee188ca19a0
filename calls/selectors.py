"""Reads of long calls, for the front that follows them."""
from __future__ import annotations

import uuid

from calls.models import LongCall
from common.refusals import NotFound
from idempotency.models import Operation, OperationState
from spaces.models import Member


def get_call(member: Member, call_id: object, *, lock: bool = False) -> LongCall:
    """The member's own long call ``call_id`` (``lock``: its row, for a change): another
    member's is as unknown as none."""
    try:
        key = uuid.UUID(str(call_id))
    except ValueError:
        key = None
    calls = LongCall.objects.select_for_update() if lock else LongCall.objects
    found = calls.filter(pk=key, member=member).first() if key is not None else None
    if found is None:
        raise NotFound(f"No task {str(call_id)[:100]!r} of yours.")
    return found


def settled(call: LongCall) -> Operation | None:
    """The call's operation once its work is done (its answer stored), else None."""
    return Operation.objects.filter(space_id=call.space_id, member_id=call.member_id, key=call.idempotency_key,
                                    state=OperationState.COMPLETED).first()
