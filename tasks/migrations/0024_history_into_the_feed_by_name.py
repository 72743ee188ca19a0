"""The history's trigger into the feed (0018) applied again from where it is defined,
``tasks.sql.history_into_feed``: from now on a change to it is a change there and a
migration that applies it, as this one does."""
from django.db import migrations


def apply(apps, schema_editor) -> None:
    from tasks.sql import history_into_feed

    schema_editor.execute(history_into_feed().install_sql())


class Migration(migrations.Migration):
    dependencies = [("tasks", "0023_attempts_accepted_by_time"), ("events", "0005_seal_by_name")]
    operations = [migrations.RunPython(apply, migrations.RunPython.noop)]
