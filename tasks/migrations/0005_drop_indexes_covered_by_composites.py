"""Drop three single-column foreign-key indexes that a composite index already leads with.

Every index on these tables is written on each claim (task status, claim, event), so
each one dropped is work saved on the hot path. Only the indexes go: the state change is
db_index=False, and the database change is a plain DROP INDEX, so the foreign keys are
not dropped and re-validated over a large table.
"""
import django.db.models.deletion
from django.db import migrations, models

COVERED = [
    # (table, column, Django's name for the FK index, the composite that covers it)
    ("tasks_claim", "task_id", "tasks_claim_task_id_e29daf59", "claim_task_cycle"),
    ("tasks_task", "space_id", "tasks_task_space_id_01a93530", "task_unique_number_per_space"),
    ("tasks_taskevent", "task_id", "tasks_taskevent_task_id_bfe419b4", "taskevent_task_id"),
]


class Migration(migrations.Migration):

    dependencies = [
        ("spaces", "0001_initial"),
        ("tasks", "0004_exports"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(f'DROP INDEX IF EXISTS "{index}"', f'CREATE INDEX "{index}" ON "{table}" ("{column}")')
                for table, column, index, _ in COVERED
            ],
            state_operations=[
                migrations.AlterField(
                    model_name="claim",
                    name="task",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE,
                                            related_name="claims", to="tasks.task"),
                ),
                migrations.AlterField(
                    model_name="task",
                    name="space",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE,
                                            related_name="tasks", to="spaces.space"),
                ),
                migrations.AlterField(
                    model_name="taskevent",
                    name="task",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE,
                                            related_name="events", to="tasks.task"),
                ),
            ],
        ),
    ]
