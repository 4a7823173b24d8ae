"""Source.last_success: when a sync last succeeded (for the metrics). Sources whose
last sync succeeded get its time; for the others it is unknown and stays empty."""

from django.db import migrations, models
from django.db.models import F


def from_last_synced(apps, schema_editor):
    Source = apps.get_model("sources", "Source")
    Source.objects.filter(status="ok", last_synced__isnull=False).update(
        last_success=F("last_synced")
    )


class Migration(migrations.Migration):
    dependencies = [
        ("sources", "0003_bind_headers_to_origin"),
    ]

    operations = [
        migrations.AddField(
            model_name="source",
            name="last_success",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(from_last_synced, migrations.RunPython.noop),
    ]
