"""Spaces' own commands (``commands.base``): a post."""
from __future__ import annotations

from typing import Any

from commands.base import Reply, command
from spaces import services
from spaces.models import Member, Role
from spaces.serializers import PostCreateSerializer, PostSerializer


@command("create_post", Role.WRITER, input=PostCreateSerializer)
def create_post(member: Member, *, unit: Any, **data: Any) -> Reply:
    post = services.create_post(space=member.space, author=member, **data)
    return Reply(201, PostSerializer(post).data)
