"""Reservations live for one allocation window (15 s by default) and mean nothing after a
crash (SPEC §4.5: a crashed process's reservation stops counting), so on PostgreSQL their
table is UNLOGGED: reserving writes no WAL and its commit does not wait for a disk flush.
After a database crash the table comes back empty, which frees every key at once; the
task, occupancy and operation tables stay fully durable."""
from django.db import migrations


def set_unlogged(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("ALTER TABLE allocation_reservation SET UNLOGGED")


def set_logged(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("ALTER TABLE allocation_reservation SET LOGGED")


class Migration(migrations.Migration):
    dependencies = [("allocation", "0003_observations")]
    operations = [migrations.RunPython(set_unlogged, set_logged)]
