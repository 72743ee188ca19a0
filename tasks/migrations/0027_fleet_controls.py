"""Fleet controls (SPEC §22): the parked status, setbacks, ready_since, and the rules the
database keeps for them, applied from where they are defined (``tasks.caps``, ``tasks.sql``)."""
import django.db.models.functions.datetime
import django.utils.timezone
from django.db import migrations, models


def apply(apps, schema_editor) -> None:
    from tasks.sql import claim_caps, full_labels, member_at_cap, ready_since

    for rule in (member_at_cap(), full_labels(), claim_caps(), ready_since()):
        schema_editor.execute(rule.install_sql())


def unapply(apps, schema_editor) -> None:
    schema_editor.execute("DROP TRIGGER IF EXISTS tasks_claim_caps ON tasks_claim; "
                          "DROP TRIGGER IF EXISTS tasks_ready_since ON tasks_task; "
                          "DROP FUNCTION IF EXISTS tasks_claim_caps(); DROP FUNCTION IF EXISTS tasks_ready_since(); "
                          "DROP FUNCTION IF EXISTS tasks_full_labels(bigint); "
                          "DROP FUNCTION IF EXISTS tasks_member_at_cap(bigint, bigint);")


class Migration(migrations.Migration):

    dependencies = [
        ('spaces', '0015_fleet_controls'),
        ('tasks', '0026_questions_and_messages'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='task',
            name='task_status_valid',
        ),
        migrations.AddField(
            model_name='task',
            name='ready_since',
            field=models.DateTimeField(db_default=django.db.models.functions.datetime.Now(), default=django.utils.timezone.now),
        ),
        migrations.AddField(
            model_name='task',
            name='setbacks',
            field=models.PositiveSmallIntegerField(db_default=0, default=0),
        ),
        migrations.AlterField(
            model_name='notification',
            name='kind',
            field=models.CharField(choices=[('task_attempt', 'Task Attempt'), ('attempt_accepted', 'Attempt Accepted'), ('attempt_rejected', 'Attempt Rejected'), ('task_reopened', 'Task Reopened'), ('task_superseded', 'Task Superseded'), ('claim_lapsed', 'Claim Lapsed'), ('task_unblocked', 'Task Unblocked'), ('webhook_disabled', 'Webhook Disabled'), ('approval_requested', 'Approval Requested'), ('approval_given', 'Approval Given'), ('approval_refused', 'Approval Refused'), ('question_asked', 'Question Asked'), ('question_answered', 'Question Answered'), ('question_expired', 'Question Expired'), ('message', 'Message'), ('task_parked', 'Task Parked')], max_length=32),
        ),
        migrations.AlterField(
            model_name='task',
            name='status',
            field=models.CharField(choices=[('proposed', 'Proposed'), ('waiting', 'Waiting'), ('parked', 'Parked'), ('open', 'Open'), ('claimed', 'Claimed'), ('assigned', 'Assigned'), ('in_review', 'In Review'), ('done', 'Done'), ('rejected', 'Rejected'), ('withdrawn', 'Withdrawn'), ('superseded', 'Superseded')], default='open', max_length=16),
        ),
        migrations.AlterField(
            model_name='taskevent',
            name='kind',
            field=models.CharField(choices=[('created', 'Created'), ('claimed', 'Claimed'), ('joined', 'Joined'), ('given_back', 'Given Back'), ('claim_lapsed', 'Lapsed'), ('assigned', 'Assigned'), ('attempt', 'Attempt'), ('check', 'Check'), ('accepted', 'Accepted'), ('reopened', 'Reopened'), ('superseded', 'Superseded'), ('withdrawn', 'Withdrawn'), ('rejected', 'Rejected'), ('held', 'Held'), ('note', 'Note'), ('priority_changed', 'Priority Changed'), ('labels_changed', 'Labels Changed'), ('blocker_added', 'Blocker Added'), ('blocker_removed', 'Blocker Removed'), ('unblocked', 'Unblocked'), ('budget_changed', 'Budget Changed'), ('approved', 'Approved'), ('refused', 'Refused'), ('asked', 'Asked'), ('answered', 'Answered'), ('question_expired', 'Question Expired'), ('unasked', 'Unasked'), ('parked', 'Parked'), ('unparked', 'Unparked')], max_length=16),
        ),
        migrations.AddConstraint(
            model_name='task',
            constraint=models.CheckConstraint(condition=models.Q(('status__in', ['proposed', 'waiting', 'parked', 'open', 'claimed', 'assigned', 'in_review', 'done', 'rejected', 'withdrawn', 'superseded'])), name='task_status_valid'),
        ),
        # An open task's aging counts from its last change (the best record there is of when it opened).
        migrations.RunSQL("UPDATE tasks_task SET ready_since = updated_at", migrations.RunSQL.noop),
        migrations.AddIndex(
            model_name='task',
            index=models.Index(condition=models.Q(('status', 'open')), fields=['space', 'priority', 'ready_since'], name='task_open_by_age'),
        ),
        migrations.RunPython(apply, unapply),
    ]
