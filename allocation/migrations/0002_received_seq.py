"""The arrival sequence of SPEC §4.5 (PostgreSQL; SQLite uses ReceivedSeqTicket rows)."""
from django.db import migrations


def create_sequence(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("CREATE SEQUENCE IF NOT EXISTS allocation_received_seq")


def drop_sequence(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP SEQUENCE IF EXISTS allocation_received_seq")


class Migration(migrations.Migration):
    dependencies = [("allocation", "0001_initial")]
    operations = [migrations.RunPython(create_sequence, drop_sequence)]
