"""``GET /metrics`` in Prometheus' text format (SPEC §20), with ``prometheus-client``.

Counters and histograms are kept by each process where the thing happens (a request, a
wait, a lapse, a delivery). Under gunicorn they are summed across the host's worker
processes by the library's multiprocess mode: ``gunicorn.conf.py`` gives every process one
``PROMETHEUS_MULTIPROC_DIR`` and marks a worker's files dead when it exits. The state of the
spaces (ready work, the oldest ready task, the webhook backlog, the export queue) is read
from the database at scrape time, in a fixed number of statements whatever the number of
spaces: the TOP_SPACES largest by live work by name, the rest summed under ``_other``.

The route answers a scraper presenting ``SPACES_METRICS_TOKEN`` as a bearer token; with no
token set, only a scraper on this machine (loopback).
"""
from __future__ import annotations

import hmac
import ipaddress
import os
from typing import Iterator

from django.conf import settings
from django.db.models import Count, Min, Q
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client import REGISTRY as PROCESS_REGISTRY
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector

TOP_SPACES = 20


class DatabaseCollector:
    """What the database says at scrape time (a handful of statements)."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        now = timezone.now()
        yield from space_gauges(now)
        yield from backlog_gauges(now)


def space_gauges(now) -> Iterator[GaugeMetricFamily]:
    from spaces.models import Space
    from tasks.filters import blocked, ready_condition
    from tasks.models import LIVE_STATUSES, Task, TaskStatus
    from tasks.status import with_shown_status

    live = with_shown_status(Task.objects.filter(status__in=LIVE_STATUSES), now)
    counts: dict[int, dict[str, int]] = {}
    for row in (live.order_by().values("space_id", "shown_status")
                .annotate(total=Count("pk"), blocked=Count("pk", filter=Q(blocked())))):
        figures = counts.setdefault(row["space_id"], {"ready": 0, "claimed": 0, "in_review": 0, "live": 0})
        figures["live"] += row["total"]
        if row["shown_status"] == TaskStatus.OPEN:
            figures["ready"] += row["total"] - row["blocked"]
        elif row["shown_status"] in (TaskStatus.CLAIMED, TaskStatus.ASSIGNED):
            figures["claimed"] += row["total"]
        elif row["shown_status"] == TaskStatus.IN_REVIEW:
            figures["in_review"] += row["total"]
    oldest = dict(Task.objects.filter(ready_condition(now)).order_by().values("space_id")
                  .annotate(first=Min("created_at")).values_list("space_id", "first"))
    top = sorted(counts, key=lambda s: -counts[s]["live"])[:TOP_SPACES]
    slugs = dict(Space.objects.filter(pk__in=top).values_list("pk", "slug"))
    families = {name: GaugeMetricFamily(f"spaces_space_{name}", help, labels=["space"]) for name, help in (
        ("ready_tasks", "Ready tasks (open, nothing live blocks them)"), ("claimed_tasks", "Claimed or assigned tasks"),
        ("in_review_tasks", "Tasks with an attempt waiting for a check"),
        ("oldest_ready_seconds", "Age of the space's oldest ready task"))}
    other = {"ready": 0, "claimed": 0, "in_review": 0}
    other_oldest = None
    for space_id, figures in counts.items():
        first = oldest.get(space_id)
        if space_id in slugs:
            label = [slugs[space_id]]
            families["ready_tasks"].add_metric(label, figures["ready"])
            families["claimed_tasks"].add_metric(label, figures["claimed"])
            families["in_review_tasks"].add_metric(label, figures["in_review"])
            families["oldest_ready_seconds"].add_metric(label, (now - first).total_seconds() if first else 0)
        else:
            for name in other:
                other[name] += figures[name]
            other_oldest = first if other_oldest is None or (first and first < other_oldest) else other_oldest
    if len(counts) > len(slugs):
        for name in other:
            families[f"{name}_tasks"].add_metric(["_other"], other[name])
        families["oldest_ready_seconds"].add_metric(["_other"],
                                                    (now - other_oldest).total_seconds() if other_oldest else 0)
    yield from families.values()
    yield spend_gauge(now, slugs)


def spend_gauge(now, slugs: dict[int, str]) -> GaugeMetricFamily:
    """SPEC §19, §20: each space's spend this month (its running total: one row a space), the
    spaces named above by name and the rest summed."""
    from costs.models import MonthSpend
    from costs.selectors import month_of

    family = GaugeMetricFamily("spaces_space_spend_usd", "The space's spend this calendar month (UTC), USD",
                               labels=["space"])
    other = None
    for space_id, usd in MonthSpend.objects.filter(month=month_of(now)).values_list("space_id", "usd"):
        if space_id in slugs:
            family.add_metric([slugs[space_id]], float(usd))
        else:
            other = (other or 0) + usd  # summed exactly (Decimal), shown as a float
    if other is not None:
        family.add_metric(["_other"], float(other))
    return family


def backlog_gauges(now) -> Iterator[GaugeMetricFamily]:
    from idempotency.models import OperationState
    from exports.models import Export
    from webhooks.models import Delivery, DeliveryState

    pending = Delivery.objects.filter(state=DeliveryState.PENDING).aggregate(n=Count("pk"), first=Min("created_at"))
    yield GaugeMetricFamily("spaces_webhook_pending_deliveries", "Webhook deliveries not yet delivered or failed",
                            value=pending["n"])
    yield GaugeMetricFamily("spaces_webhook_oldest_pending_seconds", "Age of the oldest pending webhook delivery",
                            value=(now - pending["first"]).total_seconds() if pending["first"] else 0)
    queued = Export.objects.filter(operation__state__in=[OperationState.UNKNOWN, OperationState.IN_PROGRESS]).count()
    yield GaugeMetricFamily("spaces_export_queue", "Exports waiting or running", value=queued)


def allowed(request: HttpRequest) -> bool:
    token = settings.SPACES_METRICS_TOKEN
    if token:
        given = request.headers.get("Authorization", "")
        return hmac.compare_digest(given.encode(), f"Bearer {token}".encode())
    try:
        return ipaddress.ip_address(request.META.get("REMOTE_ADDR", "")).is_loopback
    except ValueError:
        return False


def metrics_view(request: HttpRequest) -> HttpResponse:
    if not allowed(request):
        return HttpResponse("Forbidden: present SPACES_METRICS_TOKEN as a bearer token, or scrape from loopback.\n",
                            status=403, content_type="text/plain")
    registry = CollectorRegistry()
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        MultiProcessCollector(registry)  # every worker process of this host, summed
    else:
        registry = PROCESS_REGISTRY  # one process (runserver, the tests)
    body = generate_latest(registry) + generate_latest(DATABASE_REGISTRY)
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)


DATABASE_REGISTRY = CollectorRegistry(auto_describe=False)
DATABASE_REGISTRY.register(DatabaseCollector())
