"""Fleet controls (SPEC §22): the space settings max_claims_per_member, label_caps,
priority_aging_minutes and max_cycles."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('spaces', '0014_people_in_the_loop'),
    ]

    operations = [
        migrations.AddField(
            model_name='space',
            name='label_caps',
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name='space',
            name='max_claims_per_member',
            field=models.PositiveSmallIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='space',
            name='max_cycles',
            field=models.PositiveSmallIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='space',
            name='priority_aging_minutes',
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddConstraint(
            model_name='space',
            constraint=models.CheckConstraint(condition=models.Q(('max_claims_per_member__isnull', True), models.Q(('max_claims_per_member__gte', 1), ('max_claims_per_member__lte', 1000)), _connector='OR'), name='space_max_claims_per_member_1_1000'),
        ),
        migrations.AddConstraint(
            model_name='space',
            constraint=models.CheckConstraint(condition=models.Q(('priority_aging_minutes__isnull', True), models.Q(('priority_aging_minutes__gte', 1), ('priority_aging_minutes__lte', 43200)), _connector='OR'), name='space_priority_aging_1_43200'),
        ),
        migrations.AddConstraint(
            model_name='space',
            constraint=models.CheckConstraint(condition=models.Q(('max_cycles__isnull', True), models.Q(('max_cycles__gte', 1), ('max_cycles__lte', 100)), _connector='OR'), name='space_max_cycles_1_100'),
        ),
    ]
