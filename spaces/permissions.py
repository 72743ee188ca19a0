"""The one role check: what a member's role lets it do (SPEC §2)."""
from __future__ import annotations

from spaces import errors
from spaces.models import ROLE_RANK, Member


def role_refusal(member: Member, required: str) -> errors.DomainError | None:
    """Why ``member`` may not do what needs role ``required``; None if it may. The one role
    check: routes (``IsMember``) and commands (``tasks.commands``) both ask it."""
    if ROLE_RANK[member.role] < ROLE_RANK[required]:
        return errors.Forbidden(f"This action needs the {required} role; your key is a {member.role}.")
    return None
