"""The arrival sequence of SPEC §4.5."""
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("allocation", "0001_initial")]
    operations = [
        migrations.RunSQL("CREATE SEQUENCE IF NOT EXISTS allocation_received_seq",
                          "DROP SEQUENCE IF EXISTS allocation_received_seq"),
    ]
