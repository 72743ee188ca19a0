"""SPEC §17's webhooks: endpoints a steward registers, deliveries signed as Standard Webhooks
says, at least once and in seq order per endpoint, retried, disabled, safe by default."""
from __future__ import annotations

import json
import threading
import time
from collections import deque
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from events.models import Event
from tasks.models import Notification
from tests.webhooks.receiver import Receiver
from webhooks import delivery as worker
from webhooks.models import Delivery, DeliveryState, Endpoint

S = "/v1/spaces/agent-lab"


@pytest.fixture
def local(settings):
    """A first run on one machine: http:// and 127.0.0.1 allowed."""
    settings.SPACES_WEBHOOK_ALLOW_HTTP = True
    settings.SPACES_WEBHOOK_ALLOW_PRIVATE = True
    return settings


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


def register(steward, url: str, **fields) -> dict:
    response = steward.api.post(f"{S}/webhooks", {"url": url, **fields})
    assert response.status_code == 201, response.content
    return response.json()


def deliver() -> int:
    dispatcher = worker.Dispatcher(4, listen=False)
    try:
        return dispatcher.drain(20)
    finally:
        dispatcher.close()


def verified(hook: dict | str, received) -> dict:
    secret = hook if isinstance(hook, str) else hook["secret"]
    return Webhook(secret).verify(received.body, received.headers)


def test_registering_shows_the_secret_once_and_only_to_a_steward(steward, writer, local, receiver):
    hook = register(steward, receiver.url, types=["task.created"], description="CI")
    assert hook["secret"].startswith("whsec_") and hook["types"] == ["task.created"] and hook["enabled"] is True
    shown = steward.api.get(f"{S}/webhooks/{hook['id']}").json()
    assert "secret" not in shown and shown["url"] == receiver.url and shown["description"] == "CI"
    assert [h["id"] for h in steward.api.get(f"{S}/webhooks").json()["results"]] == [hook["id"]]
    for method, path in [("get", "/webhooks"), ("post", "/webhooks"), ("get", f"/webhooks/{hook['id']}"),
                         ("post", f"/webhooks/{hook['id']}/test"), ("get", f"/webhooks/{hook['id']}/deliveries")]:
        assert getattr(writer.api, method)(f"{S}{path}").status_code == 403, path
    assert steward.api.get(f"{S}/webhooks/999999").status_code == 404


@pytest.mark.parametrize("url, why", [
    ("http://example.com/hook", "https"),
    ("https://127.0.0.1/hook", "not a public address"),
    ("https://10.1.2.3/hook", "not a public address"),
    ("https://169.254.169.254/latest", "not a public address"),
    ("https://[::1]/hook", "not a public address"),
    ("https://[::ffff:192.168.0.1]/hook", "not a public address"),
    ("https://[64:ff9b::7f00:1]/hook", "not a public address"),  # NAT64 of 127.0.0.1
    ("https://[64:ff9b::a9fe:a9fe]/hook", "not a public address"),  # NAT64 of 169.254.169.254
    ("https://[64:ff9b:1::a00:1]/hook", "not a public address"),  # NAT64's local-use prefix
    ("https://[2002:7f00:1::]/hook", "not a public address"),  # 6to4 of 127.0.0.1
    ("https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/hook", "not a public address"),  # Teredo, client 127.0.0.1
    ("https://[::127.0.0.1]/hook", "not a public address"),  # IPv4-compatible
    ("https://[::ffff:0:7f00:1]/hook", "not a public address"),  # SIIT
    ("https://[fec0::1]/hook", "not a public address"),  # site-local
    ("https://[::]/hook", "not a public address"),
    ("https://example.com/h\u00f6ok", "ASCII"),
    ("https://example.com/a b", "valid URL"),
    ("https://example.com/a\r\nb", "valid URL"),
    ("https://localhost/hook", "not a public address"),
    ("https://user:pw@example.com/hook", "credentials"),
    ("https://no-such-host.invalid/hook", "does not resolve"),
])
def test_an_endpoint_must_be_https_on_a_public_address_by_default(steward, url, why):
    response = steward.api.post(f"{S}/webhooks", {"url": url})
    assert response.status_code == 422, response.content
    assert why in json.dumps(response.json()["fields"]["url"])
    assert not Endpoint.objects.exists()


def test_bad_fields_are_refused_by_name(steward, local, receiver):
    for body, field in [({"url": receiver.url, "types": ["task.nope"]}, "types"),
                        ({"url": receiver.url, "types": "task.created"}, "types"),
                        ({"url": receiver.url, "secret": "x"}, "secret"), ({}, "url")]:
        response = steward.api.post(f"{S}/webhooks", body)
        assert response.status_code == 422 and field in response.json()["fields"], (body, response.content)


def test_events_arrive_signed_in_seq_order_filtered_by_type(steward, writer, local, receiver):
    hook = register(steward, receiver.url, types=["task.created", "task.claimed"])
    other = Receiver()
    try:
        everything = register(steward, other.url)
        titles = [f"Deliver webhook number {n}" for n in range(5)]
        numbers = [writer.api.post(f"{S}/tasks", {"title": t}).json()["id"] for t in titles]
        writer.api.post(f"{S}/next", {"number": numbers[0]})
        steward.api.patch(S, {"similar_threshold": 0.5})
        assert deliver() >= 7
        bodies = [verified(hook, r) for r in receiver.wait_for(6)]
        assert [b["type"] for b in bodies] == ["task.created"] * 5 + ["task.claimed"]
        assert [b["task"] for b in bodies] == numbers + [numbers[0]]
        assert [b["seq"] for b in bodies] == sorted(b["seq"] for b in bodies)
        assert receiver.received[0].headers["webhook-id"] == bodies[0]["id"]
        assert bodies[0]["data"] and bodies[0]["actor"]["name"] == "writer"
        everyone = [verified(everything, r)["type"] for r in other.wait_for(7)]
        assert everyone == ["task.created"] * 5 + ["task.claimed", "space.settings_changed"]
        with pytest.raises(WebhookVerificationError):
            verified(everything, receiver.received[0])  # another endpoint's secret does not verify it
    finally:
        other.close()
    listed = steward.api.get(f"{S}/webhooks/{hook['id']}/deliveries").json()["results"]
    assert [d["state"] for d in listed] == ["delivered"] * 6 and listed[0]["type"] == "task.claimed"
    assert listed[0]["tries"][0]["status_code"] == 200 and listed[0]["tries"][0]["answer"] == "ok"


def test_a_failed_try_goes_again_later_with_the_same_id_and_the_rest_waits_behind_it(steward, writer, local,
                                                                                      receiver):
    receiver.answers = deque([500])
    hook = register(steward, receiver.url)
    writer.api.post(f"{S}/tasks", {"title": "First of two in order"})
    writer.api.post(f"{S}/tasks", {"title": "Second of two in order"})
    deliver()
    assert len(receiver.received) == 1  # the first failed: the second waits behind it
    first = Delivery.objects.filter(endpoint_id=hook["id"]).order_by("id").first()
    assert first.state == DeliveryState.PENDING and first.attempts == 1
    assert 4 <= (first.next_at - timezone.now()).total_seconds() <= 6  # about 5 s, SPEC §17
    [tried] = first.tries.all()
    assert tried.status_code == 500 and len(tried.answer) == 1024  # the first KiB of the answer
    Delivery.objects.filter(pk=first.pk).update(next_at=timezone.now())  # its 5 s have passed
    deliver()
    ids = [r.headers["webhook-id"] for r in receiver.wait_for(3)]
    assert ids[0] == ids[1] == f"evt_{Event.objects.get(seq=first.seq, space_id=first.space_id).pk}"
    assert [verified(hook, r)["seq"] for r in receiver.received][1:] == [first.seq, first.seq + 1]
    assert Endpoint.objects.get(pk=hook["id"]).failing_since is None


def test_the_retry_schedule_then_failure_and_a_retry_on_request(steward, writer, local, receiver):
    receiver.default = 503
    hook = register(steward, receiver.url)
    writer.api.post(f"{S}/tasks", {"title": "Never received at first"})
    waits = []
    for _ in range(7):
        Delivery.objects.filter(endpoint_id=hook["id"], state="pending").update(next_at=timezone.now())
        deliver()
        pending = Delivery.objects.get(endpoint_id=hook["id"])
        waits.append(round((pending.next_at - timezone.now()).total_seconds()))
    assert waits == [5, 30, 120, 600, 3600, 14400, 14400]
    Delivery.objects.filter(endpoint_id=hook["id"]).update(next_at=timezone.now(),
                                                           give_up_at=timezone.now() - timedelta(seconds=1))
    deliver()
    failed = Delivery.objects.get(endpoint_id=hook["id"])
    assert failed.state == DeliveryState.FAILED and failed.attempts == 8
    retried = steward.api.post(f"{S}/webhooks/{hook['id']}/deliveries/{failed.pk}/retry")
    assert retried.status_code == 202 and retried.json()["state"] == "pending"
    again = steward.api.post(f"{S}/webhooks/{hook['id']}/deliveries/{failed.pk}/retry")
    assert again.status_code == 409 and again.json()["error"] == "delivery_not_failed"
    receiver.default = 204
    deliver()
    assert Delivery.objects.get(pk=failed.pk).state == DeliveryState.DELIVERED
    assert len({r.headers["webhook-id"] for r in receiver.received}) == 1 and len(receiver.received) == 9


def test_an_endpoint_answering_410_is_disabled_with_an_event_and_a_notification(steward, writer, local, receiver):
    receiver.default = 410
    hook = register(steward, receiver.url)
    writer.api.post(f"{S}/tasks", {"title": "Gone for good"})
    deliver()
    endpoint = Endpoint.objects.get(pk=hook["id"])
    assert not endpoint.enabled and "410" in endpoint.disabled_reason
    assert Event.objects.filter(type="webhook.disabled", data__webhook=hook["id"]).exists()
    notes = steward.api.get("/v1/notifications").json()["results"]
    assert any(n["kind"] == "webhook_disabled" and n["details"]["webhook"] == hook["id"] for n in notes)
    writer.api.post(f"{S}/tasks", {"title": "Not sent to a disabled endpoint"})
    deliver()
    assert len(receiver.received) == 1
    assert steward.api.post(f"{S}/webhooks/{hook['id']}/test").json()["error"] == "endpoint_disabled"


def test_an_endpoint_failing_for_24_hours_is_disabled(steward, writer, local, receiver):
    receiver.default = 500
    hook = register(steward, receiver.url)
    Endpoint.objects.filter(pk=hook["id"]).update(failing_since=timezone.now() - timedelta(hours=24, seconds=1))
    writer.api.post(f"{S}/tasks", {"title": "The last straw"})
    deliver()
    endpoint = Endpoint.objects.get(pk=hook["id"])
    assert not endpoint.enabled and "24 h" in endpoint.disabled_reason


def test_a_rotated_secret_signs_beside_the_old_one_for_a_day(steward, writer, local, receiver):
    hook = register(steward, receiver.url)
    rotated = steward.api.post(f"{S}/webhooks/{hook['id']}/rotate-secret").json()
    assert rotated["secret"] != hook["secret"] and rotated["previous_secret_until"]
    writer.api.post(f"{S}/tasks", {"title": "Signed twice"})
    deliver()
    [arrived] = receiver.wait_for(1)
    assert verified(hook, arrived) == verified(rotated, arrived)
    assert len(arrived.headers["webhook-signature"].split(" ")) == 2
    Endpoint.objects.filter(pk=hook["id"]).update(previous_secret_until=timezone.now())
    steward.api.post(f"{S}/webhooks/{hook['id']}/test")
    deliver()
    later = receiver.wait_for(2)[1]
    assert verified(rotated, later)["type"] == "webhook.test"
    with pytest.raises(WebhookVerificationError):
        verified(hook, later)


def test_a_replayed_registration_answers_a_fresh_secret_and_the_lost_one_stops(steward, local, receiver):
    headers = {"Idempotency-Key": "register-hook-1"}
    first = steward.api.post(f"{S}/webhooks", {"url": receiver.url}, headers=headers)
    again = steward.api.post(f"{S}/webhooks", {"url": receiver.url}, headers=headers)
    assert first.status_code == again.status_code == 201 and again["Idempotent-Replayed"] == "true"
    assert first.json()["id"] == again.json()["id"] and first.json()["secret"] != again.json()["secret"]
    assert Endpoint.objects.get().secret == again.json()["secret"] and Endpoint.objects.count() == 1


def test_patch_delete_and_a_test_event(steward, local, receiver):
    hook = register(steward, receiver.url)
    changed = steward.api.patch(f"{S}/webhooks/{hook['id']}", {"types": ["task.claimed"], "enabled": False}).json()
    assert changed["types"] == ["task.claimed"] and changed["enabled"] is False
    assert steward.api.patch(f"{S}/webhooks/{hook['id']}", {"enabled": True}).json()["enabled"] is True
    test = steward.api.post(f"{S}/webhooks/{hook['id']}/test")
    assert test.status_code == 202 and test.json()["type"] == "webhook.test"
    deliver()
    [arrived] = receiver.wait_for(1)
    body = verified(hook, arrived)
    assert body["type"] == "webhook.test" and body["data"] == {"webhook": hook["id"]} and body["seq"] is None
    assert steward.api.delete(f"{S}/webhooks/{hook['id']}").status_code == 204
    assert steward.api.get(f"{S}/webhooks/{hook['id']}").status_code == 404


def test_the_address_is_checked_again_at_delivery(steward, writer, local, receiver):
    hook = register(steward, receiver.url)
    local.SPACES_WEBHOOK_ALLOW_PRIVATE = False  # as if the name now resolved to this machine
    writer.api.post(f"{S}/tasks", {"title": "Never reaches a private address"})
    deliver()
    assert receiver.received == []
    [tried] = Delivery.objects.get(endpoint_id=hook["id"]).tries.all()
    assert tried.status_code is None and "not a public address" in tried.error


def test_redirects_are_not_followed(steward, writer, local, receiver):
    receiver.default = 302
    hook = register(steward, receiver.url)
    writer.api.post(f"{S}/tasks", {"title": "Redirected nowhere"})
    deliver()
    assert len(receiver.received) == 1
    assert Delivery.objects.get(endpoint_id=hook["id"]).state == DeliveryState.PENDING


def test_a_slow_endpoint_never_delays_another(steward, writer, local):
    slow, fast = Receiver(delay=4.0), Receiver()
    try:
        register(steward, slow.url)
        register(steward, fast.url)
        dispatcher = worker.Dispatcher(4)
        stop = threading.Event()

        def run() -> None:
            while not stop.is_set():
                dispatcher.pause(dispatcher.round())
            connection.close()

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        try:
            writer.api.post(f"{S}/tasks", {"title": "Slow and fast both get it"})
            sent = time.monotonic()
            writer.api.post(f"{S}/tasks", {"title": "Fast gets this too at once"})
            fast.wait_for(2, 5)
            slow.wait_for(1, 5)
            assert len(fast.received) == 2 and fast.received[1].at - sent < 1.0
            assert len(slow.received) == 1  # still answering its first
        finally:
            stop.set()
            thread.join(10)
            dispatcher.close()
    finally:
        slow.close()
        fast.close()


def test_endpoints_due_take_the_free_slots_in_turn_not_by_id(steward, writer, local, receiver):
    """More endpoints due than slots: each round leases the one served longest ago, so a low id
    is not served before the others every round (58 endpoints waited p50 36 s for a slot)."""
    hooks = [register(steward, receiver.url)["id"] for _ in range(3)]
    writer.api.post(f"{S}/tasks", {"title": "Every endpoint is due"})
    served = []
    for _ in range(4):
        [(endpoint_id, token)] = worker.lease_due(1)
        served.append(endpoint_id)
        worker.end_lease(endpoint_id, token)  # a turn that sent nothing yet: the endpoint stays due
    assert served == [*hooks, hooks[0]]


def test_a_stewards_change_never_moves_the_workers_cursor_back(steward, writer, local, receiver):
    """The worker moves an endpoint's cursor while a steward edits it: the edit writes only what
    it changes, so no event is taken twice and the endpoint never sticks."""
    hook = register(steward, receiver.url)
    stale = Endpoint.objects.get(pk=hook["id"])  # as a steward's edit read it
    writer.api.post(f"{S}/tasks", {"title": "Taken before the edit"})
    deliver()
    from webhooks import services

    moved = Endpoint.objects.get(pk=hook["id"]).cursor
    assert moved > stale.cursor
    services.update(endpoint=stale, description="edited meanwhile")
    assert Endpoint.objects.get(pk=hook["id"]).cursor == moved
    writer.api.post(f"{S}/tasks", {"title": "Taken after the edit"})
    deliver()
    assert len(receiver.wait_for(2)) == 2 and len({r.headers["webhook-id"] for r in receiver.received}) == 2
    assert Endpoint.objects.get(pk=hook["id"]).description == "edited meanwhile"


@pytest.mark.parametrize("address, public", [
    ("8.8.8.8", True), ("2606:4700::1", True), ("::ffff:8.8.8.8", True),
    ("64:ff9b::808:808", True), ("2002:808:808::", True),  # translations of a public address
    ("10.0.0.1", False), ("::1", False), ("::ffff:127.0.0.1", False), ("64:ff9b::7f00:1", False),
    ("64:ff9b::a9fe:a9fe", False), ("2002:a00:1::", False), ("::127.0.0.1", False), ("::ffff:0:7f00:1", False),
    ("::8.8.8.8", False), ("fec0::1", False), ("fe80::1%eth0", False), ("ff02::1", False),
])
def test_every_embedded_ipv4_address_is_judged_as_itself(address, public):
    from webhooks.addresses import is_public

    assert is_public(address) is public


class Trickle:
    """An endpoint that answers a byte at a time, never ending its answer in time."""

    def __init__(self, pause: float) -> None:
        import socket

        self.listener = socket.create_server(("127.0.0.1", 0))
        self.pause, self.stop = pause, threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}/hook"

    def serve(self) -> None:
        self.listener.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                continue
            with conn:
                for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok":
                    if self.stop.wait(self.pause):
                        break
                    try:
                        conn.sendall(bytes([byte]))
                    except OSError:
                        break

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.listener.close()


def test_a_try_ends_at_its_deadline_however_slowly_the_answer_trickles_in(local):
    """Each read's timeout would let a byte a second hold a try for the whole answer (42 s
    here): the try's deadline is for all of it, and the answer is not taken as delivered."""
    from webhooks import addresses

    trickle = Trickle(pause=1.0)
    try:
        started = time.monotonic()
        answer = addresses.post(trickle.url, b"{}", {}, timeout=1.5)
        assert not answer.ok and answer.status is None and answer.error.startswith("timed out")
        assert time.monotonic() - started < 40  # well before the answer could have been whole
    finally:
        trickle.close()


def test_an_endpoint_that_cannot_be_sent_fails_its_tries_recorded_and_never_logs_its_secret(
        steward, writer, local, receiver, caplog):
    """Registration refuses these now; one stored before is tried, fails, and is retried as any
    failing endpoint is, and the token never reaches a log or a try's error."""
    hook = register(steward, receiver.url)
    Endpoint.objects.filter(pk=hook["id"]).update(push_token="s3cret\r\nX-Evil: 1")
    writer.api.post(f"{S}/tasks", {"title": "Never sent with a broken header"})
    with caplog.at_level("DEBUG"):
        deliver()
    delivery = Delivery.objects.get(endpoint_id=hook["id"])
    [tried] = delivery.tries.all()
    assert delivery.state == DeliveryState.PENDING and delivery.attempts == 1 and delivery.next_at > timezone.now()
    assert tried.status_code is None and tried.error == "could not be sent (ValueError)"
    assert receiver.received == []
    assert "s3cret" not in caplog.text and Endpoint.objects.get(pk=hook["id"]).failing_since is not None
