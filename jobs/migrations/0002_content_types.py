"""The content type of jobs follows the model to this app, so its permissions
(``view_job`` and the rest) keep their rows and every group or person holding one
keeps it, now named ``jobs.*``."""

from django.db import migrations

MODELS = ("job",)


def move_content_types(apps, schema_editor):  # type: ignore[no-untyped-def]
    move(apps, "catalog", "jobs")


def move_back(apps, schema_editor):  # type: ignore[no-untyped-def]
    move(apps, "jobs", "catalog")


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
        ("jobs", "0001_initial"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(move_content_types, move_back)]
