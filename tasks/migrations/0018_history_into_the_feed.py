"""Every history event of a task is also an event of its space's feed (SPEC §17), written by
the same statement that writes the history row, whichever code path wrote it (the ORM, the
create statement, next's statement): a trigger, so there is no second path to forget. The
feed's type is ``task.`` and the history kind; its data is the history's details."""
from django.db import migrations

INTO_FEED = """
CREATE FUNCTION tasks_history_into_feed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events_event (space_id, seq, type, task_number, actor_id, data, at)
    SELECT NEW.space_id, NULL, 'task.' || NEW.kind, t.number, NEW.actor_id, NEW.details, NEW.created_at
    FROM tasks_task t WHERE t.id = NEW.task_id;
    RETURN NULL;
END $$;
CREATE TRIGGER tasks_history_into_feed AFTER INSERT ON tasks_taskevent
    FOR EACH ROW EXECUTE FUNCTION tasks_history_into_feed();
"""
OUT = "DROP TRIGGER tasks_history_into_feed ON tasks_taskevent; DROP FUNCTION tasks_history_into_feed();"


class Migration(migrations.Migration):
    dependencies = [("tasks", "0017_wait_slots"), ("events", "0002_seal_at_commit")]
    operations = [migrations.RunSQL(INTO_FEED, OUT)]
