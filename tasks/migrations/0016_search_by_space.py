"""The search vector holds its space's lexeme too (tasks.search): a search in one space reads
only that space's matches from the GIN index, however many other spaces hold the same words.

A generated column's expression cannot be altered in place: the column and its index are
dropped and made again, which rewrites the table once (about 2 s per 220,000 tasks here)."""
import django.contrib.postgres.indexes
import django.contrib.postgres.search
from django.db import migrations, models

import tasks.search


class Migration(migrations.Migration):

    dependencies = [
        ("tasks", "0015_space_labels"),
    ]

    operations = [
        migrations.RemoveIndex(model_name="task", name="task_search"),
        migrations.RemoveField(model_name="task", name="search"),
        migrations.AddField(
            model_name="task",
            name="search",
            field=models.GeneratedField(
                db_persist=True,
                expression=django.contrib.postgres.search.CombinedSearchVector(
                    django.contrib.postgres.search.SearchVector("title", "body", config="english"), "||",
                    tasks.search.SpaceLexeme(), django.contrib.postgres.search.SearchConfig("english")),
                output_field=django.contrib.postgres.search.SearchVectorField()),
        ),
        migrations.AddIndex(
            model_name="task",
            index=django.contrib.postgres.indexes.GinIndex(fields=["search"], name="task_search"),
        ),
    ]
