"""The operation models leave for the idempotency app (``idempotency.0001``), by state alone:
their tables stay as they are; a reservation's operation points at the idempotency app's."""
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('allocation', '0014_composite_keys'),
        ('exports', '0004_operation_is_idempotencys'),
        ('idempotency', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.AlterField(
                model_name='reservation',
                name='operation',
                field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='idempotency.operation'),
            ),
            migrations.RemoveField(model_name='operation', name='member'),
            migrations.RemoveField(model_name='operation', name='space'),
            migrations.RemoveField(model_name='operationobservation', name='operation'),
            migrations.RemoveField(model_name='operationobservation', name='space'),
            migrations.DeleteModel(name='Operation'),
            migrations.DeleteModel(name='OperationObservation'),
        ]),
    ]
