"""What a reader's catalog version is read from (catalog.versions): each tool's
last change's catalog version, and each change's own with whether it may have
hidden its tool. Tools made before are given their catalog's version now, so a
reader who sees any tool reads that version until a change it sees; changes
made before keep 0 and are not read."""

from django.db import migrations, models

BACKFILL = """
UPDATE catalog_tool AS t SET changed_version = c.version
FROM catalog_catalog AS c WHERE c.id = t.catalog_id
"""


class Migration(migrations.Migration):
    dependencies = [
        ("catalog", "0058_tool_name_looks"),
    ]

    operations = [
        migrations.AddField(
            model_name="tool",
            name="changed_version",
            field=models.PositiveBigIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="toolchange",
            name="catalog_version",
            field=models.PositiveBigIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="toolchange",
            name="hides",
            field=models.BooleanField(default=False),
        ),
        migrations.AddIndex(
            model_name="toolchange",
            index=models.Index(
                condition=models.Q(("hides", True)),
                fields=["catalog", "catalog_version"],
                name="toolchange_hiding",
            ),
        ),
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
    ]
