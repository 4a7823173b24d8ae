"""A partial index of the jobs that wait or run (the sweeper's and the metrics'
reads), so neither scans the finished ones."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("catalog", "0054_tool_original_name"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="job",
            index=models.Index(
                condition=models.Q(("state__in", ["queued", "running"])),
                fields=["state", "created"],
                name="job_waiting",
            ),
        ),
    ]
