"""The feed's rule the database keeps (SPEC §17): each event is numbered as its transaction
commits. Applied by ``events/migrations/0005_seal_by_name.py``; ``tests/events/test_triggers.py``
holds the database's definition to this one.

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

from common.sql import Trigger, column, table
from events.models import Event, FeedCounter

CHANNEL = "spaces_events"  # the NOTIFY channel the feed's followers listen on


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
