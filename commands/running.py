"""A command run for a front that is not REST (MCP, A2A): the same runner, the same answers.

REST's mutating routes run in the unit the middleware opens (``fronts.rest.middleware``); the
MCP tools and the A2A operations call ``run_command``, which runs the command as its REST route
does: a command that changes something as one unit of work, by the same runner, and with an
idempotency key as an attempt at an operation (SPEC §7.1), so a retry answers with the first
outcome instead of doing the work twice.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from rest_framework.utils.encoders import JSONEncoder

from commands.unit import Answer, Idempotent, UnitOfWork, run_unit
from common.refusals import DomainError, Unauthenticated
from commands.base import Command
from spaces.models import Member


@dataclass(frozen=True)
class Caller:
    """Who calls: the member the API key authenticated, and the key as presented (an
    operation with an idempotency key authenticates it again, in its unit of work)."""

    member: Member
    raw_key: str
    key_id: int | None = None  # the key's row, whose waits are counted (SPEC §15 Capacity)
    base_url: str = ""  # where the caller reached this server (the A2A card names its interfaces by it)


def answer_of(call) -> Answer:
    """What ``call`` returns, as JSON (or the answer it made), or its refusal, as the answer an
    operation stores."""
    try:
        result = call()
        return result if isinstance(result, Answer) else Answer(200, json.loads(json.dumps(result, default=str)))
    except DomainError as error:
        return Answer(error.http_status, error.as_body())


def run_command(caller: Caller, command: Command, *, front: str, data: Any = None,
                idempotency_key: str | None = None, followed_until: float | None = None,
                **lookups: Any) -> Answer:
    """``command`` for ``caller``: its reply (status and JSON body) or its refusal (the REST
    problem body), as an answer. ``front`` names the operation's path (``/{front}/{command}``),
    so the same key sent to the same command through one front replays. A refusal of the
    runner itself (a reused or malformed idempotency key, one in progress) is raised, and so is
    ``WaitElsewhere`` for a caller that follows a wait itself (``followed_until``, run_unit's)."""
    def act(who: Member, unit: UnitOfWork | None = None) -> Answer:
        reply = command(who, unit=unit, data=data, **lookups)
        return Answer(reply.status, json.loads(json.dumps(reply.body, cls=JSONEncoder)), secret=reply.secret)

    if not command.mutates:
        return answer_of(lambda: act(caller.member))

    def work(unit: UnitOfWork) -> Answer:
        return answer_of(lambda: act(unit.api_key.member if unit.api_key else caller.member, unit))

    idempotent = None if not idempotency_key else Idempotent(
        raw_key=caller.raw_key, key=idempotency_key, method=front.upper(), path=f"/{front}/{command.name}",
        body={"data": data, **lookups})
    _, answer = run_unit(work, idempotent=idempotent, caller_key=caller.key_id, followed_until=followed_until)
    if answer is None:
        raise Unauthenticated()
    return answer
