"""The board's webhooks page (SPEC §17): a space's endpoints and their recent deliveries,
failed first, with a test, disable or enable, and sending a failed delivery again: the same
commands as the API and the admin, under the admin's model permissions."""
from __future__ import annotations

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.auth.decorators import permission_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.utils import timezone
from django.urls import reverse
from django.views.decorators.http import require_POST

from commands.unit import in_unit
from common.refusals import DomainError, Forbidden, NotFound
from fronts.admin.webhooks import failed_first
from spaces.models import Space
from spaces.commands import steward_for_admin_user
from webhooks import commands
from webhooks.models import Delivery, Endpoint

RECENT = 10  # deliveries shown per endpoint
CHANGE_ENDPOINT, CHANGE_DELIVERY = "webhooks.change_endpoint", "webhooks.change_delivery"


@staff_member_required
@permission_required("webhooks.view_endpoint", raise_exception=True)
def webhooks_page(request: HttpRequest, slug: str) -> HttpResponse:
    space = get_object_or_404(Space, slug=slug)
    endpoints = [(endpoint, list(failed_first(Delivery.objects.filter(endpoint=endpoint))[:RECENT]))
                 for endpoint in Endpoint.objects.filter(space=space).order_by("id")]
    return render(request, "board/webhooks.html", {
        "space": space, "endpoints": endpoints, "can_change": request.user.has_perm(CHANGE_ENDPOINT),
        "can_retry": request.user.has_perm(CHANGE_DELIVERY), "now": timezone.now()})


ENDPOINT_ACTIONS = {  # the API's commands, with the input each action gives them
    "test": (commands.SEND_TEST, None),
    "disable": (commands.UPDATE, {"enabled": False}),
    "enable": (commands.UPDATE, {"enabled": True}),
}


@require_POST
@staff_member_required
def webhook_action_view(request: HttpRequest, slug: str, webhook_id: int, action: str,
                        delivery_id: int | None = None) -> HttpResponse:
    """``…/webhooks/{id}/{test|disable|enable}`` and ``…/webhooks/{id}/deliveries/{d}/retry``:
    the command, then back to the page with what happened."""
    space = get_object_or_404(Space, slug=slug)
    try:
        needed = CHANGE_DELIVERY if delivery_id is not None else CHANGE_ENDPOINT
        if not request.user.has_perm(needed):
            raise Forbidden(f"Your account lacks the {needed} permission.")
        if delivery_id is None and action not in ENDPOINT_ACTIONS:
            raise NotFound(f"No webhook action {action!r}.")

        if delivery_id is not None:
            command, data, lookups = commands.RETRY_DELIVERY, None, {"delivery_id": delivery_id}
        else:
            (command, data), lookups = ENDPOINT_ACTIONS[action], {}
        # one unit of work, the runner's, as every mutating request; the admin user acts as a steward
        in_unit(lambda unit: command(steward_for_admin_user(space=space, username=request.user.get_username()),
                                     unit=unit, data=data, webhook_id=webhook_id, **lookups))
        messages.success(request, f"{action.capitalize()}: done for webhook {webhook_id}.")
    except DomainError as error:
        messages.error(request, error.detail)
    return HttpResponseRedirect(reverse("board-webhooks", args=[space.slug]))
