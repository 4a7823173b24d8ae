"""API keys: unlimited catalogs become an explicit ``all_catalogs`` flag; a key
records the key (``parent``) or person (``owner_name``) that made it, so it stops
with them.

Existing keys with an empty catalog list meant "every catalog": they get
``all_catalogs=True`` so nothing that works today stops. Keys with an owner get its
username copied (a key whose owner was already deleted cannot be told apart)."""

from typing import Any

from django.db import migrations, models


def make_unlimited_explicit(apps: Any, schema_editor: Any) -> None:
    ApiClient = apps.get_model("catalog", "ApiClient")
    for client in ApiClient.objects.select_related("owner").iterator():
        fields = []
        if not client.catalogs:
            client.all_catalogs = True
            fields.append("all_catalogs")
        if client.owner is not None:
            client.owner_name = client.owner.username
            fields.append("owner_name")
        if fields:
            client.save(update_fields=fields)


class Migration(migrations.Migration):
    dependencies = [("catalog", "0050_outages_job_worker")]

    operations = [
        migrations.AddField(
            model_name="apiclient",
            name="all_catalogs",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="apiclient",
            name="owner_name",
            field=models.CharField(blank=True, default="", max_length=150),
        ),
        migrations.AddField(
            model_name="apiclient",
            name="parent",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=models.deletion.SET_NULL,
                related_name="children",
                to="catalog.apiclient",
            ),
        ),
        migrations.AddField(
            model_name="apiclient",
            name="parent_name",
            field=models.CharField(blank=True, default="", max_length=100),
        ),
        migrations.RunPython(make_unlimited_explicit, migrations.RunPython.noop),
    ]
