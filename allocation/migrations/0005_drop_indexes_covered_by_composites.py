"""Drop single-column foreign-key indexes that a composite index already leads with.

Each one cost a write per row, and gave a prepared statement's generic plan a wrong
index to choose while a table had no statistics yet. Only the indexes go: the state
change is db_index=False, and the database change is a plain DROP INDEX, so the foreign
keys are not dropped and re-validated over a large table.
"""
import django.db.models.deletion
from django.db import migrations, models

COVERED = [
    # (table, column, Django's name for the FK index, the composite that covers it)
    ('allocation_occupancy', 'space_id', 'allocation_occupancy_space_id_ab60efa8', 'occupancy_one_per_conflict_key'),
    ('allocation_operation', 'space_id', 'allocation_operation_space_id_4b7b1ce6', 'operation_one_per_member_key'),
    ('allocation_operationobservation', 'operation_id', 'allocation_operationobservation_operation_id_c729ae37', 'observation_operation_time'),
    ('allocation_reservation', 'space_id', 'allocation_reservation_space_id_f7a7f289', 'reservation_one_per_conflict_key'),
    ('allocation_slothold', 'space_id', 'allocation_slothold_space_id_36474090', 'hold_one_per_slot'),
]


class Migration(migrations.Migration):

    dependencies = [
        ('allocation', '0004_reservation_unlogged'),
        ('spaces', '0002_drop_indexes_covered_by_composites'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(f'DROP INDEX IF EXISTS "{index}"', f'CREATE INDEX "{index}" ON "{table}" ("{column}")')
                for table, column, index, _ in COVERED
            ],
            state_operations=[
                migrations.AlterField(
                    model_name='occupancy',
                    name='space',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='spaces.space'),
                ),
                migrations.AlterField(
                    model_name='operation',
                    name='space',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='spaces.space'),
                ),
                migrations.AlterField(
                    model_name='operationobservation',
                    name='operation',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='observations', to='allocation.operation'),
                ),
                migrations.AlterField(
                    model_name='reservation',
                    name='space',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='spaces.space'),
                ),
                migrations.AlterField(
                    model_name='slothold',
                    name='space',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='spaces.space'),
                ),
            ],
        ),
    ]
