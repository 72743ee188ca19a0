"""Seqs given at commit (SPEC §17: none skipped, also when transactions commit in another
order than they began).

A deferred constraint trigger runs as its transaction commits, after every other statement
of it: it takes the space's counter row (inserted on first use) and numbers the event. The
row's lock is held until the commit ends, and it is the last lock the transaction takes, so
(1) seqs follow commit order — a transaction numbers its events only once the one before it
has committed and become visible — and (2) it cannot deadlock with the locks the change
itself took: nobody holds the counter while waiting for anything else.

It also says so: ``NOTIFY spaces_events, '<space id>'``, delivered at the commit, so the
followers waiting on the feed read at once (SPEC §17, with §15's listener).
"""
from django.db import migrations

SEAL = """
CREATE FUNCTION events_seal() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    next_seq bigint;
BEGIN
    INSERT INTO events_feedcounter (space_id, last_seq, purged_through) VALUES (NEW.space_id, 1, 0)
    ON CONFLICT (space_id) DO UPDATE SET last_seq = events_feedcounter.last_seq + 1
    RETURNING last_seq INTO next_seq;
    UPDATE events_event SET seq = next_seq WHERE id = NEW.id;
    -- Delivered as the transaction commits; one per space however many events it wrote.
    PERFORM pg_notify('spaces_events', NEW.space_id::text);
    RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER events_seal AFTER INSERT ON events_event
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION events_seal();
"""
UNSEAL = "DROP TRIGGER events_seal ON events_event; DROP FUNCTION events_seal();"


class Migration(migrations.Migration):
    dependencies = [("events", "0001_initial")]
    operations = [migrations.RunSQL(SEAL, UNSEAL)]
