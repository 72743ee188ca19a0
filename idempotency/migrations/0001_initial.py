"""The operation models, taken over from the allocation app by state alone: their tables
(``allocation_operation``, ``allocation_operationobservation``), made by ``allocation.0001`` to
``allocation.0014``, keep their names, rows, constraints and indexes. Nothing runs on the
database."""

import common.space_keys
import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('allocation', '0014_composite_keys'),
        ('spaces', '0013_space_budget_usd'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.CreateModel(
                name='Operation',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('key', models.CharField(max_length=255)),
                    ('fingerprint', models.CharField(max_length=64)),
                    ('binding_generation', models.PositiveIntegerField()),
                    ('method', models.CharField(max_length=8)),
                    ('path', models.CharField(max_length=500)),
                    ('state', models.CharField(choices=[('in_progress', 'In Progress'), ('unknown', 'Unknown'), ('completed', 'Completed'), ('failed', 'Failed')], default='in_progress', max_length=16)),
                    ('lease_epoch', models.PositiveIntegerField(default=1)),
                    ('lease_expires_at', models.DateTimeField(blank=True, null=True)),
                    ('revision', models.PositiveIntegerField(default=1)),
                    ('response_status', models.PositiveSmallIntegerField(blank=True, null=True)),
                    ('response_body', models.JSONField(blank=True, null=True)),
                    ('response_content', models.TextField(blank=True, null=True)),
                    ('response_headers', models.JSONField(blank=True, default=dict)),
                    ('secret', models.JSONField(blank=True, null=True)),
                    ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('updated_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('completed_at', models.DateTimeField(blank=True, null=True)),
                    ('member', common.space_keys.SpaceForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='operations', to='spaces.member')),
                    ('space', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='spaces.space')),
                ],
                options={
                    'db_table': 'allocation_operation',
                },
            ),
            migrations.CreateModel(
                name='OperationObservation',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('kind', models.CharField(choices=[('lease', 'Lease'), ('in_progress', 'In Progress'), ('success', 'Success'), ('failure', 'Failure'), ('retry', 'Retry'), ('transient', 'Transient'), ('timeout', 'Timeout'), ('lease_expired', 'Lease Expired'), ('transport_error', 'Transport Error')], max_length=16)),
                    ('key', models.CharField(max_length=255)),
                    ('fingerprint', models.CharField(max_length=64)),
                    ('binding_generation', models.PositiveIntegerField()),
                    ('lease_epoch', models.PositiveIntegerField(blank=True, null=True)),
                    ('response_status', models.PositiveSmallIntegerField(blank=True, null=True)),
                    ('response_body', models.JSONField(blank=True, null=True)),
                    ('verdict', models.CharField(blank=True, choices=[('applied', 'Applied'), ('recorded', 'Recorded'), ('quarantined', 'Quarantined'), ('conflict', 'Conflict'), ('refused', 'Refused')], max_length=16)),
                    ('warned', models.BooleanField(default=False)),
                    ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('operation', common.space_keys.SpaceForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='observations', to='idempotency.operation')),
                    ('space', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='spaces.space')),
                ],
                options={
                    'db_table': 'allocation_operationobservation',
                },
            ),
            migrations.AddIndex(
                model_name='operation',
                index=models.Index(fields=['created_at'], name='operation_created_at'),
            ),
            migrations.AddIndex(
                model_name='operation',
                index=models.Index(condition=models.Q(('state', 'in_progress')), fields=['lease_expires_at'], name='operation_live_leases'),
            ),
            migrations.AddConstraint(
                model_name='operation',
                constraint=models.UniqueConstraint(fields=('space', 'member', 'key'), name='operation_one_per_member_key'),
            ),
            migrations.AddConstraint(
                model_name='operation',
                constraint=models.CheckConstraint(condition=models.Q(('state__in', ['in_progress', 'unknown', 'completed', 'failed'])), name='operation_state_valid'),
            ),
            migrations.AddIndex(
                model_name='operationobservation',
                index=models.Index(fields=['operation', 'created_at'], name='observation_operation_time'),
            ),
        ]),
    ]
