"""Jobs record the worker (host and pid) that claimed them."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("catalog", "0004_default_groups")]

    operations = [
        migrations.AddField(
            model_name="job",
            name="worker_host",
            field=models.CharField(blank=True, default="", max_length=255),
        ),
        migrations.AddField(
            model_name="job",
            name="worker_pid",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
    ]
