"""A fresh install has the curator, compliance and admin groups (nobody makes them).

Only the admin group may be offered unsafe tools; give it to another group in the
admin site when a team needs it."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

GROUPS = ("curator", "compliance", "admin")


def create_groups(apps, schema_editor):  # type: ignore[no-untyped-def]
    # Permissions are normally made after migrate; make ours now so the admin
    # group can hold the unsafe-tools permission from the first run.
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, verbosity=0, apps=apps)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name in GROUPS:
        Group.objects.get_or_create(name=name)
    unsafe = Permission.objects.get(
        content_type__app_label="catalog", codename="use_unsafe_tools"
    )
    Group.objects.get(name="admin").permissions.add(unsafe)


class Migration(migrations.Migration):
    dependencies = [
        ("catalog", "0003_client_permissions_and_person_scope"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]
    operations = [migrations.RunPython(create_groups, migrations.RunPython.noop)]
