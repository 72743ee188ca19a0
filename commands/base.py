"""The command: one per action, the same for every front (REST, MCP, A2A, the admin, the board).

A command owns what an action needs beyond its service: the role it takes, its input (the
one serializer that checks it, so every front answers the same ``422``), its lookups, its
refusals and the shape of its reply. Fronts find the caller, run the command in a unit of
work (``commands.unit``, ``commands.running``) and send its reply as it is. Each app's commands
are in its ``commands`` module (``tasks.commands``, ``spaces.commands``, ``costs.commands``);
all register in ``COMMANDS`` under the MCP tool's name.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from common.problems import translate
from spaces.serializers import NoInputSerializer
from spaces.models import Member, Role
from spaces.permissions import role_refusal
from spaces.secrets import SecretAnswer


@dataclass(frozen=True)
class Reply:
    """What a command answers: the HTTP status REST sends, and the body every front sends;
    ``secret`` when the body carries one (shown once: a replay gets a fresh one, spaces.secrets)."""

    status: int
    body: Any
    secret: SecretAnswer | None = None


def validated(serializer_class: type[serializers.Serializer] | None, data: Any) -> dict:
    """``data`` through the command's serializer: the same limits and the same ``422
    invalid_request`` with per-field details, whichever front it came through. A command that
    takes no input (``None``) takes nothing, ``null`` or ``{}``, and refuses any field."""
    if serializer_class is None:
        if data is None:
            return {}
        serializer_class = NoInputSerializer
    serializer = serializer_class(data=data)  # JSON null is refused, as DRF refuses no data
    if not serializer.is_valid():
        raise translate(ValidationError(serializer.errors))
    return dict(serializer.validated_data)


@dataclass(frozen=True)
class Command:
    """An action: its name (the MCP tool's), the role it takes, its input and what it does."""

    name: str
    role: str
    run: Callable[..., Reply]
    input: type[serializers.Serializer] | None = None
    mutates: bool = True

    def __call__(self, member: Member, *, unit: Any, data: Any = None, **lookups: Any) -> Reply:
        refused = role_refusal(member, self.role)
        if refused is not None:
            raise refused
        return self.run(member, unit=unit, **lookups, **validated(self.input, data))  # the caller first: an input may be named member


COMMANDS: dict[str, Command] = {}


def command(name: str, role: str, *, input: type[serializers.Serializer] | None = None, mutates: bool = True
            ) -> Callable[[Callable[..., Reply]], Command]:
    def register(run: Callable[..., Reply]) -> Command:
        COMMANDS[name] = Command(name, role, run, input, mutates)
        return COMMANDS[name]
    return register
