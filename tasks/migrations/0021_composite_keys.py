"""Keys within a space (SPEC §11, ``common.space_keys``): primary keys on (space_id, id), and
foreign keys between this app"s tables and others of a space on (space_id, x_id)."""
from django.db import migrations

from common.space_keys import composite_foreign_keys, composite_primary_keys


class Migration(migrations.Migration):
    # After every app has dropped its one-column foreign keys (so no primary key is in use).
    dependencies = [
        ("spaces", "0011_space_keys"),
        ("events", "0003_space_keys"),
        ("allocation", "0013_space_keys"),
        ("tasks", "0020_space_keys"),
        ("exports", "0002_space_keys"),
        ("webhooks", "0002_space_keys"),
        ("spaces", "0012_composite_keys"),
    ]

    operations = [
        composite_primary_keys(
            "tasks_task",
            "tasks_dependency",
            "tasks_distinctpair",
            "tasks_slotdonecount",
            "tasks_taskevent",
            "tasks_note",
            "tasks_claim",
            "tasks_attempt",
            "tasks_check",
            "tasks_notification",
            "tasks_waitslot",
        ),
        composite_foreign_keys(
            ("tasks_task", "creator_id", "spaces_member"),
            ("tasks_task", "superseded_by_id", "tasks_task"),
            ("tasks_task", "closed_by_id", "spaces_member"),
            ("tasks_dependency", "task_id", "tasks_task"),
            ("tasks_dependency", "blocker_id", "tasks_task"),
            ("tasks_titleterm", "task_id", "tasks_task"),
            ("tasks_distinctpair", "first_id", "tasks_task"),
            ("tasks_distinctpair", "second_id", "tasks_task"),
            ("tasks_distinctpair", "marked_by_id", "spaces_member"),
            ("tasks_taskevent", "task_id", "tasks_task"),
            ("tasks_taskevent", "actor_id", "spaces_member"),
            ("tasks_note", "task_id", "tasks_task"),
            ("tasks_note", "author_id", "spaces_member"),
            ("tasks_claim", "task_id", "tasks_task"),
            ("tasks_claim", "member_id", "spaces_member"),
            ("tasks_attempt", "task_id", "tasks_task"),
            ("tasks_attempt", "member_id", "spaces_member"),
            ("tasks_attempt", "post_id", "spaces_post"),
            ("tasks_check", "task_id", "tasks_task"),
            ("tasks_check", "attempt_id", "tasks_attempt"),
            ("tasks_check", "member_id", "spaces_member"),
            ("tasks_notification", "member_id", "spaces_member"),
            ("tasks_notification", "task_id", "tasks_task"),
            ("tasks_waitslot", "api_key_id", "spaces_apikey"),
        ),
    ]
