"""SPEC §4.2 as amended: a title's conflict key ignores default-ignorable code points (zero-width
spaces and joiners, the soft hyphen, the BOM, …). Tasks keyed by their title are keyed anew;
where that makes live tasks share a key, their occupancy names the lowest-numbered one (SPEC
§4.4: the others stay, as leftover duplicates a steward can supersede). Reservations on a key
that changed are dropped: they live for seconds and their intents retry."""
from django.db import migrations

LIVE = ("open", "claimed", "assigned", "in_review")


def rekey(apps, schema_editor):
    from allocation.conflict_keys import task_target

    Task = apps.get_model("tasks", "Task")
    Occupancy = apps.get_model("allocation", "Occupancy")
    Reservation = apps.get_model("allocation", "Reservation")
    changed: dict[tuple, set[str]] = {}  # (space, new target, delivery mode) -> old targets
    fallback = Task.objects.filter(conflict_kind="create_task", work_item_id__isnull=True).select_related("space")
    for task in fallback.only("pk", "title", "conflict_target", "delivery_mode", "space__slug").iterator():
        target = task_target(task.space.slug, work_item_id=None, title=task.title)
        if target != task.conflict_target:
            changed.setdefault((task.space_id, target, task.delivery_mode), set()).add(task.conflict_target)
            Task.objects.filter(pk=task.pk).update(conflict_target=target)
    for (space_id, target, mode), old_targets in changed.items():
        targets = [target, *old_targets]
        Reservation.objects.filter(space_id=space_id, kind="create_task", target__in=targets,
                                   delivery_mode=mode).delete()
        Occupancy.objects.filter(space_id=space_id, kind="create_task", target__in=targets,
                                 delivery_mode=mode).delete()
        first = Task.objects.filter(space_id=space_id, conflict_kind="create_task", conflict_target=target,
                                    delivery_mode=mode, status__in=LIVE).order_by("number").first()
        if first is not None:
            Occupancy.objects.create(space_id=space_id, kind="create_task", target=target, delivery_mode=mode,
                                     task=first)


class Migration(migrations.Migration):
    dependencies = [
        ("tasks", "0006_share_token_hashed_with_expiry"),
        ("allocation", "0009_reservation_without_foreign_key_checks"),
    ]
    operations = [migrations.RunPython(rekey, migrations.RunPython.noop)]
