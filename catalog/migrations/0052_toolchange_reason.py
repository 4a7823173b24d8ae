"""A tool change keeps the curator's reason; bulk edits run as jobs of kind
``bulk``."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("catalog", "0051_apiclient_parent_and_all_catalogs")]

    operations = [
        migrations.AddField(
            model_name="toolchange",
            name="reason",
            field=models.CharField(blank=True, default="", max_length=500),
        ),
        migrations.AlterField(
            model_name="job",
            name="kind",
            field=models.CharField(
                choices=[
                    ("import", "Import"),
                    ("reindex", "Re-index"),
                    ("bulk", "Bulk edit"),
                ],
                max_length=10,
            ),
        ),
    ]
