"""Routines (SPEC §22): a cron schedule's tasks, one a period (RoutineRun)."""

import common.space_keys
import django.contrib.postgres.fields
import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

from common.space_keys import composite_foreign_keys, composite_primary_keys


class Migration(migrations.Migration):

    dependencies = [
        ('spaces', '0015_fleet_controls'),
        ('tasks', '0027_fleet_controls'),
    ]

    operations = [
        migrations.CreateModel(
            name='Routine',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('title', models.CharField(max_length=500)),
                ('body', models.TextField(blank=True)),
                ('schedule', models.CharField(max_length=120)),
                ('time_zone', models.CharField(default='UTC', max_length=64)),
                ('work_item_id', models.CharField(blank=True, max_length=32, null=True)),
                ('priority', models.PositiveSmallIntegerField(default=2)),
                ('labels', django.contrib.postgres.fields.ArrayField(base_field=models.CharField(max_length=40), blank=True, default=list, size=10)),
                ('overlap', models.CharField(choices=[('skip', 'Skip'), ('allow', 'Allow')], default='skip', max_length=8)),
                ('catch_up', models.CharField(choices=[('latest', 'Latest'), ('none', 'None')], default='latest', max_length=8)),
                ('enabled', models.BooleanField(default=True)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('updated_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('next_run_at', models.DateTimeField(blank=True, null=True)),
                ('last_period', models.DateTimeField(blank=True, null=True)),
                ('created_by', common.space_keys.SpaceForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='spaces.member')),
                ('space', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='spaces.space')),
            ],
        ),
        migrations.CreateModel(
            name='RoutineRun',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('period', models.DateTimeField()),
                ('reason', models.CharField(blank=True, max_length=200)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('routine', common.space_keys.SpaceForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='runs', to='tasks.routine')),
                ('space', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='spaces.space')),
                ('task', common.space_keys.SpaceForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='tasks.task')),
            ],
        ),
        migrations.AddIndex(
            model_name='routine',
            index=models.Index(condition=models.Q(('enabled', True)), fields=['next_run_at'], name='routine_due'),
        ),
        migrations.AddIndex(
            model_name='routine',
            index=models.Index(fields=['space', 'id'], name='routine_by_space'),
        ),
        migrations.AddConstraint(
            model_name='routine',
            constraint=models.CheckConstraint(condition=models.Q(('priority__lte', 4)), name='routine_priority_valid'),
        ),
        migrations.AddConstraint(
            model_name='routine',
            constraint=models.CheckConstraint(condition=models.Q(('overlap__in', ['skip', 'allow'])), name='routine_overlap_valid'),
        ),
        migrations.AddConstraint(
            model_name='routine',
            constraint=models.CheckConstraint(condition=models.Q(('catch_up__in', ['latest', 'none'])), name='routine_catch_up_valid'),
        ),
        migrations.AddConstraint(
            model_name='routinerun',
            constraint=models.UniqueConstraint(fields=('space', 'routine', 'period'), name='routine_run_once_a_period'),
        ),
        composite_primary_keys("tasks_routine", "tasks_routinerun"),
        composite_foreign_keys(
            ("tasks_routine", "created_by_id", "spaces_member"), ("tasks_routinerun", "routine_id", "tasks_routine"),
            ("tasks_routinerun", "task_id", "tasks_task"),
        ),
    ]
