"""The ``approver`` group: people who approve or deny the tool calls that need a
person (``calls.decide_approval``); the ``admin`` group holds the permission too."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

APPROVERS = ("approver", "admin")


def create_group(apps, schema_editor):  # type: ignore[no-untyped-def]
    # Permissions are normally made after migrate; make ours now so the groups
    # hold it from the first run (as catalog/0004 does for unsafe tools).
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, verbosity=0, apps=apps)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    decide = Permission.objects.get(
        content_type__app_label="calls", codename="decide_approval"
    )
    for name in APPROVERS:
        Group.objects.get_or_create(name=name)[0].permissions.add(decide)


def remove_group(apps, schema_editor):  # type: ignore[no-untyped-def]
    apps.get_model("auth", "Group").objects.filter(name="approver").delete()


class Migration(migrations.Migration):
    dependencies = [
        ("calls", "0001_initial"),
        ("catalog", "0004_default_groups"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]
    operations = [
        migrations.AlterModelOptions(
            name="approval",
            options={
                "ordering": ["-created"],
                "permissions": [
                    ("decide_approval", "Can approve or deny tool calls")
                ],
            },
        ),
        migrations.RunPython(create_group, remove_group),
    ]
