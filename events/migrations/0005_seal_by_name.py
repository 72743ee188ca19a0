"""The seal (0002) applied again from where it is defined, ``events.sql.seal``: from now on
a change to it is a change there and a migration that applies it, as this one does."""
from django.db import migrations


def apply(apps, schema_editor) -> None:
    from events.sql import seal

    schema_editor.execute(seal().install_sql())


class Migration(migrations.Migration):
    dependencies = [("events", "0004_composite_keys")]
    operations = [migrations.RunPython(apply, migrations.RunPython.noop)]
