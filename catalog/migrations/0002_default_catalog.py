"""The ``default`` catalog always exists."""

from django.db import migrations


def create_default(apps, schema_editor):  # type: ignore[no-untyped-def]
    Catalog = apps.get_model("catalog", "Catalog")
    Catalog.objects.get_or_create(
        slug="default",
        defaults={"name": "Default", "description": "The catalog agents use by default."},
    )


class Migration(migrations.Migration):
    dependencies = [("catalog", "0001_initial")]
    operations = [migrations.RunPython(create_default, migrations.RunPython.noop)]
