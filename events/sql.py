"""The events app's hand-written SQL, each statement named and built from the models' metadata:
the seal, the rule the database keeps as a trigger (SPEC §17: each event is numbered as its
transaction commits; applied by ``events/migrations/0005_seal_by_name.py``, and
``tests/events/test_triggers.py`` holds the database's definition to this one), and the purge
of events past their space's retention.

The seal:

A deferred constraint trigger runs as its transaction commits, after every other statement of
it: it takes the space's counter row (inserted on first use) and numbers the event. The row's
lock is held until the commit ends, and it is the last lock the transaction takes, so (1) seqs
follow commit order — a transaction numbers its events only once the one before it has
committed and become visible — and (2) it cannot deadlock with the locks the change itself
took: nobody holds the counter while waiting for anything else.

It also says so: ``NOTIFY spaces_events, '<space id>'``, delivered at the commit, so the
followers waiting on the feed read at once (SPEC §17, with §15's listener).
"""
from __future__ import annotations

from functools import cache

from django.apps import apps

from common.sql import Trigger, column, table
from events.models import Event, FeedCounter

CHANNEL = "spaces_events"  # the NOTIFY channel the feed's followers listen on
NOTIFY = f"SELECT pg_notify('{CHANNEL}', %s)"  # the seal's notification, sent by hand (a space's id as text)
# The last seq of each of these spaces' feeds (a listener's recheck; one array parameter).
LAST_SEQS = (f"SELECT {column(FeedCounter, 'space')}, {column(FeedCounter, 'last_seq')} FROM {table(FeedCounter)} "
             f"WHERE {column(FeedCounter, 'space')} = ANY(%s)")


@cache
def seal() -> Trigger:
    counter, last, purged = table(FeedCounter), column(FeedCounter, "last_seq"), column(FeedCounter, "purged_through")
    space = column(FeedCounter, "space")
    return Trigger("events_seal", on=Event._meta.db_table, timing="AFTER INSERT", deferred=True, body=f"""
DECLARE
    next_seq bigint;
BEGIN
    INSERT INTO {counter} ({space}, {last}, {purged}) VALUES (NEW.{column(Event, "space")}, 1, 0)
    ON CONFLICT ({space}) DO UPDATE SET {last} = {counter}.{last} + 1
    RETURNING {last} INTO next_seq;
    UPDATE {table(Event)} SET {column(Event, "seq")} = next_seq WHERE {column(Event, "id")} = NEW.{column(Event, "id")};
    -- Delivered as the transaction commits; one per space however many events it wrote.
    PERFORM pg_notify('{CHANNEL}', NEW.{column(Event, "space")}::text);
    RETURN NULL;
END """)


@cache
def purge_due() -> str:
    """``FROM … WHERE``: the numbered events older than their space's ``event_retention_days``
    (the space's table as the spaces app's model names it)."""
    space = apps.get_model("spaces", "Space")
    return (f"FROM {table(Event)} AS e JOIN {table(space)} AS s ON s.id = e.{column(Event, 'space')} "
            f"WHERE e.{column(Event, 'seq')} IS NOT NULL "
            f"AND e.{column(Event, 'at')} < now() - make_interval(days => s.{column(space, 'event_retention_days')})")


@cache
def purge_count() -> str:
    """How many events ``purge`` would delete now."""
    return f"SELECT count(*) {purge_due()}"


@cache
def purge() -> str:
    """Delete the events ``purge_due`` finds, and raise each space's counter's ``purged_through``
    to the last seq it deleted (a reader behind it is told ``410``); answers how many."""
    return (f"WITH gone AS (DELETE FROM {table(Event)} WHERE id IN (SELECT e.id {purge_due()}) "
            f"RETURNING {column(Event, 'space')} AS space_id, {column(Event, 'seq')} AS seq), "
            f"marked AS (UPDATE {table(FeedCounter)} AS c SET purged_through = GREATEST(c.purged_through, g.last) "
            "FROM (SELECT space_id, max(seq) AS last FROM gone GROUP BY space_id) AS g "
            "WHERE c.space_id = g.space_id) SELECT count(*) FROM gone")
