"""An export's operation is the idempotency app's now (state only: the column and its constraint stay)."""

import common.space_keys
import django.db.models.deletion
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('exports', '0003_composite_keys'),
        ('idempotency', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.AlterField(
                model_name='export',
                name='operation',
                field=common.space_keys.SpaceForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='exports', to='idempotency.operation'),
            ),
        ]),
    ]
