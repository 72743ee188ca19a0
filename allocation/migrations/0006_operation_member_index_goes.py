"""Drop allocation_operation(member_id): every lookup goes by (space, member, key), and a
generic plan made before the table had statistics chose this index over the unique one.
Index only; the foreign key stays as it is."""
import django.db.models.deletion
from django.db import migrations, models

INDEX, TABLE, COLUMN = "allocation_operation_member_id_9cb03d2f", "allocation_operation", "member_id"


class Migration(migrations.Migration):

    dependencies = [
        ("allocation", "0005_drop_indexes_covered_by_composites"),
        ("spaces", "0002_drop_indexes_covered_by_composites"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(f'DROP INDEX IF EXISTS "{INDEX}"', f'CREATE INDEX "{INDEX}" ON "{TABLE}" ("{COLUMN}")'),
            ],
            state_operations=[
                migrations.AlterField(
                    model_name="operation",
                    name="member",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE,
                                            related_name="operations", to="spaces.member"),
                ),
            ],
        ),
    ]
