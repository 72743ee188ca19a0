"""Sending webhooks (SPEC §17): what ``run_worker`` does beside exports.

The feed is the outbox. An endpoint is served by one worker thread at a time, under a lease
on the endpoint's row (``lease_until``, ``lease_token``), taken with SKIP LOCKED so several
workers share the endpoints. Serving an endpoint:

1. **fill**: the feed's events past the endpoint's ``cursor`` (up to the space's committed
   ``last_seq``: every seq up to it has committed, events/migrations/0002) that its ``types``
   match become its deliveries, and the cursor moves past them, in one transaction;
2. **send** the endpoint's pending deliveries in ``id`` (= seq) order, one at a time, each
   with the Standard Webhooks headers, outside any transaction;
3. **record** the tries, a batch at a time (at least every RECORD_EVERY seconds, and after
   any try that was not delivered), extending the lease, in one transaction that checks the
   lease is still this thread's (a worker that lost it records nothing).

A delivery that is not delivered waits for its next try (SCHEDULE) and the endpoint's later
deliveries wait behind it: an endpoint receives its events in seq order. A worker killed
mid-send leaves the delivery pending; once the lease runs out another worker sends it again,
with the same ``webhook-id`` and body. A slow endpoint holds one thread, never the others:
each worker keeps ``slots`` endpoints in flight, and gives an endpoint up after TURN_SECONDS
so a busy one cannot keep the others waiting for a slot; a lease given back ends at that
moment, so the endpoints due take the free slots in turn, the one served longest ago first.
"""
from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.db.models import F, OuterRef, Q, Subquery
from django.utils import timezone
from standardwebhooks.webhooks import Webhook

from common.problems import DATABASE_AWAY
from events import feed
from events.models import Event, FeedCounter
from telemetry import counters
from tasks.lifecycle import notify_stewards
from tasks.models import NotificationKind
from tasks.waiting import REGISTRY
from webhooks import addresses, formats
from webhooks.models import DELIVERY_LIFETIME, Delivery, DeliveryAttempt, DeliveryState, Endpoint

log = logging.getLogger("spaces.webhooks")

SCHEDULE = (5, 30, 120, 600, 3600, 4 * 3600)  # seconds before the 2nd, 3rd … try; the last repeats
LEASE = timedelta(seconds=addresses.TIMEOUT_SECONDS + 50)  # a try's timeout and the record, with room
RECORD_MARGIN = 20.0  # seconds of a lease kept to record the last try
DISABLE_AFTER = timedelta(hours=24)  # an endpoint failing every delivery this long is disabled
FILL_BATCH = 200  # events taken into deliveries at a time
SEND_BATCH = 50  # pending deliveries read at a time
TURN_SECONDS = 5.0  # an endpoint is given up after this, so the others get a slot
# Tries are recorded a batch at a time, at least this often: one transaction for many tries
# (a worker killed before it records sends them again, with the same webhook-ids).
RECORD_EVERY = 0.25
DEFAULT_SLOTS = 8  # endpoints served at once by one worker

# Leases a turn could not give back because the database went away: the worker gives them back
# once it is back, so an endpoint waits for the database, not for its lease to run out (LEASE,
# a minute). Speed only: a worker that dies leaves them to run out, and the token is the referee.
unreturned: deque[tuple[int, str]] = deque()


def signature_headers(endpoint: Endpoint, event_id: str, body: str, now: datetime) -> dict[str, str]:
    """The Standard Webhooks headers; during a rotation the old secret signs beside the new."""
    signatures = [Webhook(endpoint.secret).sign(event_id, now, body)]
    if endpoint.previous_secret and endpoint.previous_secret_until and endpoint.previous_secret_until > now:
        signatures.append(Webhook(endpoint.previous_secret).sign(event_id, now, body))
    return {"webhook-id": event_id, "webhook-timestamp": str(int(now.timestamp())),
            "webhook-signature": " ".join(signatures)}


def lease_due(limit: int) -> list[tuple[int, str]]:
    """Lease up to ``limit`` enabled endpoints with something to do now: a head delivery due, or
    (none waiting) events past their cursor. Each with its lease token."""
    now = timezone.now()
    head_at = Delivery.objects.filter(endpoint=OuterRef("pk"), state=DeliveryState.PENDING).order_by("id")
    last_seq = FeedCounter.objects.filter(space=OuterRef("space")).values("last_seq")[:1]
    with transaction.atomic():
        due = list(
            Endpoint.objects.filter(enabled=True)
            .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
            .annotate(head_at=Subquery(head_at.values("next_at")[:1]), last_seq=Subquery(last_seq))
            .filter(Q(head_at__lte=now) | Q(head_at__isnull=True, cursor__lt=F("last_seq")))
            .order_by(F("lease_until").asc(nulls_first=True), "id")  # never served, then served longest ago
            .select_for_update(skip_locked=True, of=("self",))
            .values_list("id", flat=True)[:limit])
        leased = [(endpoint_id, uuid.uuid4().hex) for endpoint_id in due]
        for endpoint_id, token in leased:
            Endpoint.objects.filter(pk=endpoint_id).update(lease_until=now + LEASE, lease_token=token)
    return leased


def fill(endpoint_id: int, token: str) -> None:
    """The endpoint's next events of the feed, as its deliveries (see the module's doc)."""
    with transaction.atomic():
        endpoint = Endpoint.objects.select_for_update().filter(pk=endpoint_id, lease_token=token).first()
        if endpoint is None:
            return
        last_seq = FeedCounter.objects.filter(space_id=endpoint.space_id).values_list("last_seq", flat=True).first()
        if not last_seq or endpoint.cursor >= last_seq:
            return
        events = Event.objects.filter(space_id=endpoint.space_id, seq__gt=endpoint.cursor, seq__lte=last_seq)
        if endpoint.types:
            events = events.filter(type__in=endpoint.types)
        if endpoint.task_number is not None:
            events = events.filter(task_number=endpoint.task_number)
        found = list(events.select_related("actor").order_by("seq")[:FILL_BATCH])
        now = timezone.now()
        Delivery.objects.bulk_create([
            Delivery(space_id=endpoint.space_id, endpoint=endpoint, event_id=f"evt_{event.pk}", seq=event.seq,
                     type=event.type, body=formats.body_of(endpoint.format, event), next_at=now,
                     give_up_at=now + DELIVERY_LIFETIME)
            for event in found], ignore_conflicts=True)  # once per event, whatever happens (the unique index)
        endpoint.cursor = found[-1].seq if len(found) == FILL_BATCH else last_seq
        endpoint.save(update_fields=["cursor"])


def serve(endpoint_id: int, token: str) -> int:
    """Fill and send the endpoint's deliveries in order while they are due, for at most
    TURN_SECONDS; then let the endpoint go. How many were delivered."""
    ends, delivered = time.monotonic() + TURN_SECONDS, 0
    lease_ends = time.monotonic() + LEASE.total_seconds()  # as lease_due took it, at the latest
    try:
        while time.monotonic() < ends:
            fill(endpoint_id, token)
            endpoint = Endpoint.objects.filter(pk=endpoint_id, lease_token=token, enabled=True).first()
            if endpoint is None:
                return delivered  # disabled, deleted, or the lease went to another worker
            batch = list(Delivery.objects.filter(endpoint_id=endpoint_id, state=DeliveryState.PENDING)
                         .order_by("id")[:SEND_BATCH])
            if not batch:
                return delivered
            tried, go_on = send_in_order(endpoint, batch, ends, lease_ends)
            if tried:
                lease_ends = time.monotonic() + LEASE.total_seconds()
                if not record(endpoint, tried, token):
                    return delivered  # the lease was lost: the next holder sends them again
            delivered += sum(1 for _, answer in tried if answer.ok)
            if not go_on:
                return delivered
        return delivered
    except DATABASE_AWAY as error:
        log.warning("webhook %s: the database went away (%s); its lease runs out and it goes again", endpoint_id,
                    error)
        return delivered
    finally:
        give_back(endpoint_id, token)
        connection.close_if_unusable_or_obsolete()  # kept for the thread's next turn unless it broke


def end_lease(endpoint_id: int, token: str) -> None:
    """The lease ends now: ``lease_until`` says when, so lease_due takes the endpoint served
    longest ago first (a round robin: a low id is not served before the others every round)."""
    Endpoint.objects.filter(pk=endpoint_id, lease_token=token).update(lease_until=timezone.now(), lease_token="")


def give_back(endpoint_id: int, token: str) -> None:
    """End a lease this worker holds; with the database away, keep it to give back later."""
    try:
        end_lease(endpoint_id, token)
    except DATABASE_AWAY:
        unreturned.append((endpoint_id, token))


def give_back_unreturned() -> None:
    """The leases turns could not give back, given back now (raises while the database is away)."""
    for _ in range(len(unreturned)):
        endpoint_id, token = unreturned.popleft()
        try:
            end_lease(endpoint_id, token)
        except DATABASE_AWAY:
            unreturned.append((endpoint_id, token))
            raise


def send_in_order(endpoint: Endpoint, batch: list[Delivery], ends: float, lease_ends: float,
                  ) -> tuple[list[tuple[Delivery, addresses.Answer]], bool]:
    """Send the batch in order until one is not delivered, one is not due yet, the turn ends or
    RECORD_EVERY passed; what was tried, and whether the turn may go on. A try ends within its
    TIMEOUT_SECONDS and before the lease does, with RECORD_MARGIN left to record it."""
    tried: list[tuple[Delivery, addresses.Answer]] = []
    record_by = time.monotonic() + RECORD_EVERY
    for delivery in batch:
        if delivery.next_at > timezone.now() or time.monotonic() >= ends:
            return tried, False  # the head waits for its next try; those behind it wait too
        now = timezone.now()
        headers = {**endpoint.extra_headers(), **signature_headers(endpoint, delivery.event_id, delivery.body, now)}
        timeout = min(addresses.TIMEOUT_SECONDS, lease_ends - RECORD_MARGIN - time.monotonic())
        if timeout <= 0:
            return tried, False  # no time left in this lease: the next turn sends it
        answer = addresses.post(endpoint.url, delivery.body.encode(), headers, timeout=timeout)
        tried.append((delivery, answer))
        if not answer.ok:
            return tried, False
        if time.monotonic() >= record_by:
            break
    return tried, True


def record(endpoint: Endpoint, tried: list[tuple[Delivery, addresses.Answer]], token: str) -> bool:
    """The tries of one batch, recorded in one transaction (all delivered but perhaps the last):
    False when the lease was lost, and nothing was written. A failed try schedules the next;
    a ``410``, or failing every delivery for DISABLE_AFTER, disables the endpoint."""
    now = timezone.now()
    with transaction.atomic():
        if not Endpoint.objects.filter(pk=endpoint.pk, lease_token=token).update(lease_until=now + LEASE):
            return False
        DeliveryAttempt.objects.bulk_create([
            DeliveryAttempt(space_id=d.space_id, delivery=d, at=now, status_code=a.status, latency_ms=a.latency_ms,
                            answer=a.body, error=a.error) for d, a in tried])
        delivered = [d.pk for d, a in tried if a.ok]
        if delivered:
            Delivery.objects.filter(pk__in=delivered).update(state=DeliveryState.DELIVERED, finished_at=now,
                                                             attempts=F("attempts") + 1)
            if endpoint.failing_since is not None:  # as read at the start of this batch
                Endpoint.objects.filter(pk=endpoint.pk).update(failing_since=None)
                endpoint.failing_since = None
        last, answer = tried[-1]
        if not answer.ok:
            failed(endpoint, last, answer, now)
    counters.DELIVERIES.labels("delivered").inc(len(delivered))
    if not answer.ok:
        counters.DELIVERIES.labels("failed" if last.state == DeliveryState.FAILED else "retry").inc()
    return True


def failed(endpoint: Endpoint, delivery: Delivery, answer: addresses.Answer, now: datetime) -> None:
    """A try that was not delivered: the next one scheduled, or the delivery failed; the
    endpoint disabled on a ``410`` or after DISABLE_AFTER of failures."""
    delivery.attempts += 1
    if answer.status == 410 or now >= delivery.give_up_at:
        delivery.state, delivery.finished_at = DeliveryState.FAILED, now
    else:
        delivery.next_at = now + timedelta(seconds=SCHEDULE[min(delivery.attempts, len(SCHEDULE)) - 1])
    delivery.save(update_fields=["attempts", "state", "finished_at", "next_at"])
    failing_since = endpoint.failing_since or now
    if endpoint.failing_since is None:
        Endpoint.objects.filter(pk=endpoint.pk, failing_since__isnull=True).update(failing_since=now)
    if answer.status == 410:
        disable(endpoint, "the endpoint answered 410 Gone")
    elif now - failing_since >= DISABLE_AFTER:
        disable(endpoint, f"every delivery failed for {DISABLE_AFTER.total_seconds() / 3600:g} h")


def disable(endpoint: Endpoint, reason: str) -> None:
    """Disabled by the worker: a ``webhook.disabled`` event and a notification to each steward."""
    Endpoint.objects.filter(pk=endpoint.pk).update(enabled=False, disabled_reason=reason)
    details = {"webhook": endpoint.pk, "url": endpoint.url, "reason": reason}
    feed.record(space_id=endpoint.space_id, type="webhook.disabled", data=details)
    notify_stewards(space_id=endpoint.space_id, kind=NotificationKind.WEBHOOK_DISABLED, **details)


class Dispatcher:
    """One worker's deliveries: up to ``slots`` endpoints served at once, each by a thread of its
    pool; a round leases what is due into free slots. Woken by the feed's notifications and
    by a thread finishing; without them it looks again every POLL_SECONDS."""

    POLL_SECONDS = 1.0

    def __init__(self, slots: int = DEFAULT_SLOTS, *, listen: bool = True) -> None:
        self.slots = slots
        self.pool = ThreadPoolExecutor(slots, thread_name_prefix="webhooks")
        self.busy: set[Future] = set()
        self.woken = threading.Event()
        self.delivered = 0
        if listen:  # a drain (--once) looks once and needs no wake-up
            REGISTRY.watch_feeds(self.woken)

    def round(self) -> float:
        """Lease what is due into the free slots; the pause before the next round."""
        for future in [f for f in self.busy if f.done()]:
            self.busy.discard(future)
            try:
                self.delivered += future.result()
            except Exception:  # a bug in one endpoint's turn must not stop the others
                log.exception("webhook delivery failed unexpectedly")
        give_back_unreturned()
        free = self.slots - len(self.busy)
        if free > 0:
            for endpoint_id, token in lease_due(free):
                future = self.pool.submit(serve, endpoint_id, token)
                future.add_done_callback(lambda _: self.woken.set())
                self.busy.add(future)
        return self.POLL_SECONDS

    def pause(self, seconds: float) -> None:
        self.woken.wait(min(seconds, self.POLL_SECONDS))
        self.woken.clear()

    def drain(self, seconds: float = 60.0) -> int:
        """Rounds until nothing is due or in flight (``run_worker --once``, tests); delivered."""
        ends = time.monotonic() + seconds
        while time.monotonic() < ends:
            self.round()
            if not self.busy:
                break
            self.pause(0.05)
        return self.delivered

    def close(self) -> None:
        """Let the deliveries in flight finish (each at most its timeout)."""
        REGISTRY.unwatch_feeds(self.woken)
        self.pool.shutdown(wait=True)
        for future in self.busy:
            if future.done() and future.exception() is None:
                self.delivered += future.result()
        self.busy.clear()
