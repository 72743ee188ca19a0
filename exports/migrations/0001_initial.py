"""The export models, taken over from the tasks app by state alone: their tables
(``tasks_export``, ``tasks_exportresult``, ``tasks_exportchunk``), made by ``tasks.0004``
to ``tasks.0010``, keep their names and rows. Nothing runs on the database."""

import django.core.serializers.json
import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('allocation', '0011_exports_stream'),
        ('spaces', '0005_catalog_changes'),
        ('tasks', '0010_exports_stream'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.CreateModel(
                name='Export',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('reserved_fingerprint', models.CharField(max_length=64)),
                    ('reserved_generation', models.PositiveIntegerField()),
                    ('share_token_hash', models.CharField(blank=True, max_length=64, null=True)),
                    ('share_expires_at', models.DateTimeField(blank=True, null=True)),
                    ('attempts_before_retry', models.PositiveIntegerField(default=0)),
                    ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('operation', models.OneToOneField(on_delete=django.db.models.deletion.PROTECT, related_name='export', to='allocation.operation')),
                    ('requested_by', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='spaces.member')),
                    ('space', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='spaces.space')),
                ],
                options={
                    'db_table': 'tasks_export',
                },
            ),
            migrations.CreateModel(
                name='ExportChunk',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('lease_epoch', models.PositiveIntegerField()),
                    ('seq', models.PositiveIntegerField()),
                    ('section', models.CharField(max_length=16)),
                    ('rows', models.PositiveIntegerField()),
                    ('data', models.TextField()),
                    ('export', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='chunks', to='exports.export')),
                    ('space', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='spaces.space')),
                ],
                options={
                    'db_table': 'tasks_exportchunk',
                },
            ),
            migrations.CreateModel(
                name='ExportResult',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('lease_epoch', models.PositiveIntegerField()),
                    ('data', models.JSONField(encoder=django.core.serializers.json.DjangoJSONEncoder)),
                    ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('export', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='results', to='exports.export')),
                    ('space', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='spaces.space')),
                ],
                options={
                    'db_table': 'tasks_exportresult',
                },
            ),
            migrations.AddConstraint(
                model_name='export',
                constraint=models.UniqueConstraint(condition=models.Q(('share_token_hash__isnull', False)), fields=('share_token_hash',), name='export_unique_share_token_hash'),
            ),
            migrations.AddIndex(
                model_name='exportchunk',
                index=models.Index(fields=['export', 'lease_epoch', 'seq'], name='exportchunk_by_export'),
            ),
            migrations.AddConstraint(
                model_name='exportchunk',
                constraint=models.UniqueConstraint(fields=('space', 'export', 'lease_epoch', 'seq'), name='exportchunk_one_per_seq'),
            ),
            migrations.AddConstraint(
                model_name='exportresult',
                constraint=models.UniqueConstraint(fields=('space', 'export', 'lease_epoch'), name='export_result_one_per_epoch'),
            ),
    
        ]),
    ]
