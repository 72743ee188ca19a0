"""The ``events`` section of GET /v1/reference: the feed (SPEC §17), from the code that keeps it."""
from __future__ import annotations

from events import feed
from fronts.reference import register_section
from fronts.reference.tasks import default, refusal
from tasks.history import feed_types
from webhooks.delivery import SCHEDULE
from webhooks.models import DELIVERY_LIFETIME, ROTATION_OVERLAP


@register_section("events")
def events_section() -> dict:
    return {
        "summary": "Every change of a space is an event of its feed, numbered by seq in the order the changes "
        "committed. GET …/events?after=SEQ answers {\"events\", \"next\"}: ask again with after=next to see every "
        "event once, in order.",
        "route": "GET /v1/spaces/{slug}/events?after=&types=a,b&task=N&limit=L&wait=S (any member)",
        "event": {"id": "evt_…", "seq": "the space's counter", "type": "see types", "at": "time of the change",
                  "actor": "{id, name} or null", "task": "the task's number or null", "data": "what changed"},
        "types": feed_types(),
        "limits": {"limit": f"1-{feed.MAX_LIMIT} (default {feed.DEFAULT_LIMIT})", "wait": f"0-{feed.MAX_WAIT} s"},
        "stream": "Accept: text/event-stream: id: seq, event: type, data: the event; resumes after Last-Event-ID; "
                  f"a comment at least every {feed.KEEPALIVE_SECONDS} s; ends after {feed.STREAM_SECONDS // 60} "
                  "minutes (reconnect with Last-Event-ID)",
        "settings": {"event_retention_days": {"default": default("event_retention_days"), "range": "1-365"}},
        "mcp": "the events tool (after, types, task, limit, wait)",
        "cli": ["spaces events [--after SEQ] [--type T]... [--follow]",
                "spaces webhooks list | add URL [--type T]... [--description D] | test ID | deliveries ID | "
                "retry ID DELIVERY | remove ID"],
        "refusals": [refusal("events_expired"), refusal("delivery_not_failed"), refusal("endpoint_disabled")],
        "webhooks": {
            "routes": ["POST/GET /v1/spaces/{slug}/webhooks", "GET/PATCH/DELETE …/webhooks/{id}",
                       "POST …/webhooks/{id}/rotate-secret", "POST …/webhooks/{id}/test",
                       "GET …/webhooks/{id}/deliveries", "POST …/webhooks/{id}/deliveries/{d}/retry"],
            "who": "stewards",
            "signing": "Standard Webhooks: webhook-id (the event's id, the same on every try), webhook-timestamp, "
                       "webhook-signature (v1, + base64 HMAC-SHA256 of id.timestamp.body under the whsec_ secret)",
            "retries": [f"{seconds} s" for seconds in SCHEDULE] + [
                f"then every {SCHEDULE[-1]} s until {DELIVERY_LIFETIME.total_seconds() / 3600:g} h have passed"],
            "order": "an endpoint receives its events in seq order, each after the earlier ones were delivered or failed",
            "rotation": f"the old secret signs beside the new for {ROTATION_OVERLAP.total_seconds() / 3600:g} h",
            "disabled": "on a 410, or after 24 h of failed deliveries: a webhook.disabled event and a notification "
                        "to the stewards",
            "addresses": "https:// and public addresses only (checked at registration and on each delivery), "
                         "unless SPACES_WEBHOOK_ALLOW_HTTP / SPACES_WEBHOOK_ALLOW_PRIVATE",
        },
    }
