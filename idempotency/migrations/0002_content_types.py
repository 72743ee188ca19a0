"""The admin's permissions on operations follow them: their content types are the idempotency
app's (a staff user given ``allocation.change_operation`` has ``idempotency.change_operation``)."""
from django.db import migrations

MODELS = ("operation", "operationobservation")


def to_idempotency(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    for model in MODELS:
        if not ContentType.objects.filter(app_label="idempotency", model=model).exists():
            ContentType.objects.filter(app_label="allocation", model=model).update(app_label="idempotency")


def to_allocation(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    for model in MODELS:
        if not ContentType.objects.filter(app_label="allocation", model=model).exists():
            ContentType.objects.filter(app_label="idempotency", model=model).update(app_label="allocation")


class Migration(migrations.Migration):

    dependencies = [
        ('contenttypes', '0002_remove_content_type_name'),
        ('idempotency', '0001_initial'),
        ('allocation', '0015_operations_move_to_idempotency'),
    ]

    operations = [migrations.RunPython(to_idempotency, to_allocation)]
