"""The content types of API keys and catalog limits follow the models to this app,
so their permissions (``view_apiclient`` and the rest) keep their rows and every
group or person holding one keeps it, now named ``identity.*``."""

from django.db import migrations

MODELS = ("apiclient", "usercatalogaccess")


def move_content_types(apps, schema_editor):  # type: ignore[no-untyped-def]
    move(apps, "catalog", "identity")


def move_back(apps, schema_editor):  # type: ignore[no-untyped-def]
    move(apps, "identity", "catalog")


def move(apps, old, new):  # type: ignore[no-untyped-def]
    ContentType = apps.get_model("contenttypes", "ContentType")
    for model in MODELS:
        moving = ContentType.objects.filter(app_label=old, model=model).first()
        if moving is None:
            continue  # a database whose content types were never made
        # One made meanwhile (a migration making permissions) holds no grant yet.
        ContentType.objects.filter(app_label=new, model=model).delete()
        moving.app_label = new
        moving.save(update_fields=["app_label"])


class Migration(migrations.Migration):
    dependencies = [
        ("identity", "0001_initial"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(move_content_types, move_back)]
