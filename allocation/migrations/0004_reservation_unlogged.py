"""Reservations live for one allocation window (15 s by default) and mean nothing after a
crash (SPEC §4.5: a crashed process's reservation stops counting), so their table is
UNLOGGED: reserving writes no WAL and its commit does not wait for a disk flush. After a
database crash the table comes back empty, which frees every key at once; the task,
occupancy and operation tables stay fully durable."""
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("allocation", "0003_observations")]
    operations = [
        migrations.RunSQL("ALTER TABLE allocation_reservation SET UNLOGGED",
                          "ALTER TABLE allocation_reservation SET LOGGED"),
    ]
