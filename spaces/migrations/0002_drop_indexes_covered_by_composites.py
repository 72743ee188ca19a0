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
    ('spaces_apikey', 'space_id', 'spaces_apikey_space_id_799c0925', 'apikey_unique_prefix_per_space'),
    ('spaces_member', 'space_id', 'spaces_member_space_id_9af90702', 'member_unique_name_per_space'),
]


class Migration(migrations.Migration):

    dependencies = [
        ('spaces', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(f'DROP INDEX IF EXISTS "{index}"', f'CREATE INDEX "{index}" ON "{table}" ("{column}")')
                for table, column, index, _ in COVERED
            ],
            state_operations=[
                migrations.AlterField(
                    model_name='apikey',
                    name='space',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='api_keys', to='spaces.space'),
                ),
                migrations.AlterField(
                    model_name='member',
                    name='space',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='members', to='spaces.space'),
                ),
            ],
        ),
    ]
