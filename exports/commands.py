"""The export commands (SPEC §7.3), a steward's: request an export, share it (a secret link,
shown once), revoke its share, retry a failed one. REST is their only front, so they are not in
``commands.base.COMMANDS`` (the registry every front walks alike)."""
from __future__ import annotations

from typing import Any

from rest_framework import serializers

from commands.base import Command, Reply
from common.refusals import NotFound
from exports import selectors, services
from exports.models import Export
from spaces.models import ApiKey, Member, Role
from spaces.secrets import SecretAnswer, reissuer
from spaces.serializers import FlatInputSerializer


class ShareSerializer(FlatInputSerializer):
    expires_in_hours = serializers.IntegerField(min_value=1, max_value=24 * 365, required=False, default=7 * 24)


def share_body(base: str, token: str) -> dict:
    return {"token": token, "url": base + token}


@reissuer("share")
def reissue_share(ref: dict) -> tuple[dict, dict]:
    """A replayed share: a fresh token for the same export; the lost answer's token stops opening it."""
    token = services.share_export(export=Export.objects.get(pk=ref["export"]), expires_in_hours=ref["hours"])
    return share_body(ref["base"], token), ref


def _request(member: Member, *, unit: Any, api_key: ApiKey | None) -> Reply:
    export = services.request_export(space=member.space, actor=member, api_key=api_key)
    return Reply(202, selectors.export_state(export))


def _share(member: Member, *, unit: Any, export_id: object, base: str, expires_in_hours: int) -> Reply:
    """``base``: where shares are opened (``…/v1/shares/``), as the caller reached this server."""
    export = selectors.get_export(member, export_id)
    token = services.share_export(export=export, expires_in_hours=expires_in_hours)
    return Reply(201, share_body(base, token),
                 SecretAnswer("share", ("token", "url"), {"export": export.pk, "base": base, "hours": expires_in_hours}))


def _unshare(member: Member, *, unit: Any, export_id: object) -> Reply:
    if not services.unshare_export(export=selectors.get_export(member, export_id)):
        raise NotFound(f"Export {export_id} is not shared.")
    return Reply(204, None)


def _retry(member: Member, *, unit: Any, export_id: object) -> Reply:
    return Reply(202, selectors.export_state(services.retry_export(export=selectors.get_export(member, export_id))))


REQUEST = Command("request_export", Role.STEWARD, _request)
SHARE = Command("share_export", Role.STEWARD, _share, input=ShareSerializer)
UNSHARE = Command("unshare_export", Role.STEWARD, _unshare)
RETRY = Command("retry_export", Role.STEWARD, _retry)
