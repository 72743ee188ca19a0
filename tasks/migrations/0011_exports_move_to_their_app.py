"""Exports move to their own app (``exports``) by state alone: their tables keep their names
and rows, and ``exports.0001_initial`` takes the models over. Nothing runs on the database."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('tasks', '0010_exports_stream'),
        ('exports', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.RemoveField(
                model_name='exportresult',
                name='export',
            ),
            migrations.RemoveField(
                model_name='exportchunk',
                name='export',
            ),
            migrations.RemoveField(
                model_name='exportchunk',
                name='space',
            ),
            migrations.RemoveField(
                model_name='exportresult',
                name='space',
            ),
            migrations.DeleteModel(
                name='Export',
            ),
            migrations.DeleteModel(
                name='ExportChunk',
            ),
            migrations.DeleteModel(
                name='ExportResult',
            ),
    
        ]),
    ]
