"""SPEC §7.3 as amended: a share link keeps only a hash of its token, and expires."""
import hashlib
from datetime import timedelta

from django.db import migrations, models
from django.db.models import Q
from django.utils import timezone


def hash_existing_tokens(apps, schema_editor):
    Export = apps.get_model("tasks", "Export")
    expires = timezone.now() + timedelta(days=7)  # links shared before had no expiry: from now, the default
    for export in Export.objects.exclude(share_token=None).only("pk", "share_token"):
        Export.objects.filter(pk=export.pk).update(
            share_token_hash=hashlib.sha256(export.share_token.encode()).hexdigest(), share_expires_at=expires)


class Migration(migrations.Migration):
    dependencies = [("tasks", "0005_drop_indexes_covered_by_composites")]

    operations = [
        migrations.AddField("export", "share_token_hash", models.CharField(blank=True, max_length=64, null=True)),
        migrations.AddField("export", "share_expires_at", models.DateTimeField(blank=True, null=True)),
        migrations.RunPython(hash_existing_tokens, migrations.RunPython.noop),
        migrations.RemoveConstraint("export", "export_unique_share_token"),
        migrations.RemoveField("export", "share_token"),
        migrations.AddConstraint("export", models.UniqueConstraint(
            condition=Q(share_token_hash__isnull=False), fields=("share_token_hash",),
            name="export_unique_share_token_hash")),
    ]
