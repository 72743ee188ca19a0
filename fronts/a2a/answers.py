"""A command's answer for the A2A front: run by the same runner as every front's, a refusal
raised as the A2A error both bindings send."""
from __future__ import annotations

from typing import Any

from commands.unit import Answer
from common.refusals import DomainError
from fronts.a2a.errors import of_domain, refused
from commands.running import Caller, run_command
from commands.base import Command

FRONT = "a2a"  # an operation's path is /a2a/<command>: the same message over either binding replays


def answered(caller: Caller, command: Command, *, cancel: bool = False, **arguments: Any) -> Answer:
    """The command's answer; a refusal (the runner's or the command's) raised as an A2A error."""
    try:
        answer = run_command(caller, command, front=FRONT, **arguments)
    except DomainError as error:
        raise of_domain(error, cancel=cancel) from None
    if answer.status >= 400:
        raise refused(answer.status, answer.body, cancel=cancel)
    return answer
