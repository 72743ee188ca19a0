"""The admin and the board list a space's endpoints and their deliveries, failed first, and
act through the API's commands (SPEC §17 Fronts), under the admin's model permissions."""
from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from tests.test_board import logged_in
from webhooks.models import Delivery, Endpoint

S = "/v1/spaces/agent-lab"
PAGE = "/board/agent-lab/webhooks"


@pytest.fixture
def hook(space, settings) -> Endpoint:
    endpoint = Endpoint.objects.create(space=space, url="https://example.com/hook", secret="whsec_AAAA")
    now = timezone.now()
    for n, state in enumerate(["delivered", "failed", "pending"], start=1):
        Delivery.objects.create(space=space, endpoint=endpoint, event_id=f"evt_{n}", seq=n, type="task.created",
                                body="{}", state=state, give_up_at=now)
    return endpoint


def test_the_board_lists_deliveries_failed_first_and_sends_one_again(hook):
    viewer = logged_in("viewer", perms=("view_endpoint",))
    page = viewer.get(PAGE)
    assert page.status_code == 200 and b"https://example.com/hook" in page.content
    text = page.content.decode()
    assert text.index(">failed<") < text.index(">pending<") < text.index(">delivered<")
    assert "Send again" not in text and "Disable" not in text  # no control without the permission
    failed = Delivery.objects.get(state="failed")
    retry = f"{PAGE}/{hook.pk}/deliveries/{failed.pk}/retry"
    viewer.post(retry)
    assert Delivery.objects.get(pk=failed.pk).state == "failed"  # refused: lacks change_delivery
    clerk = logged_in("clerk", perms=("view_endpoint", "change_endpoint", "change_delivery"))
    assert "Send again" in clerk.get(PAGE).content.decode()
    assert clerk.post(retry).status_code == 302
    assert Delivery.objects.get(pk=failed.pk).state == "pending"
    again = clerk.post(retry, follow=True)
    assert b"is pending" in again.content  # the API's refusal, shown
    clerk.post(f"{PAGE}/{hook.pk}/disable")
    assert not Endpoint.objects.get(pk=hook.pk).enabled
    clerk.post(f"{PAGE}/{hook.pk}/enable")
    clerk.post(f"{PAGE}/{hook.pk}/test")
    assert Endpoint.objects.get(pk=hook.pk).enabled and Delivery.objects.filter(type="webhook.test").count() == 1
    assert logged_in("nobody", perms=()).get(PAGE).status_code == 403


def test_the_board_says_in_words_why_a_delivery_waits_and_when_it_goes_next(hook):
    from datetime import timedelta

    from webhooks.models import DeliveryAttempt

    pending = Delivery.objects.get(state="pending")
    now = timezone.now()
    Delivery.objects.filter(pk=pending.pk).update(next_at=now + timedelta(minutes=10), attempts=1)
    DeliveryAttempt.objects.create(space=hook.space, delivery=pending, at=now, status_code=503, latency_ms=5)
    Endpoint.objects.filter(pk=hook.pk).update(failing_since=now - timedelta(hours=2))
    text = logged_in("viewer", perms=("view_endpoint",)).get(PAGE).content.decode()
    row = re.sub(r"<[^>]+>", "", text[text.index(">pending<"):])
    assert re.search("503; next try in (9|10)\xa0minutes", row), row[:200]
    assert "failing for 2\xa0hours" in text and "failing since" not in text  # in words, the ISO time in its title


def test_the_admin_lists_deliveries_failed_first_and_acts_through_the_commands(hook):
    User.objects.create_superuser("ada", "ada@example.com", "pw")
    admin = Client()
    admin.login(username="ada", password="pw")
    listing = admin.get("/admin/webhooks/delivery/").content.decode()
    rows = [listing.index(f"/admin/webhooks/delivery/{Delivery.objects.get(state=state).pk}/change/")
            for state in ("failed", "pending", "delivered")]
    assert rows == sorted(rows)
    failed = Delivery.objects.get(state="failed")
    admin.post("/admin/webhooks/delivery/", {"action": "send_again", "_selected_action": [str(failed.pk)]})
    assert Delivery.objects.get(pk=failed.pk).state == "pending"
    admin.post("/admin/webhooks/endpoint/", {"action": "send_test", "_selected_action": [str(hook.pk)]})
    assert Delivery.objects.filter(type="webhook.test", endpoint=hook).count() == 1
    admin.post("/admin/webhooks/endpoint/", {"action": "disable", "_selected_action": [str(hook.pk)]})
    assert not Endpoint.objects.get(pk=hook.pk).enabled
    page = admin.get(f"/admin/webhooks/endpoint/{hook.pk}/change/").content.decode()
    assert "whsec_" not in page and "failed first" in page
    assert admin.get("/admin/webhooks/endpoint/add/").status_code == 403
