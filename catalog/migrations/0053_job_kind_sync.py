"""Jobs of a new kind: a source's sync (sources/sync.py)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("catalog", "0052_toolchange_reason")]

    operations = [
        migrations.AlterField(
            model_name="job",
            name="kind",
            field=models.CharField(
                choices=[
                    ("import", "Import"),
                    ("reindex", "Re-index"),
                    ("bulk", "Bulk edit"),
                    ("sync", "Source sync"),
                ],
                max_length=10,
            ),
        ),
    ]
