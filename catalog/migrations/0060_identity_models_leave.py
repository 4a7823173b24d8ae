"""API keys and people's catalog limits now belong to the identity app (its 0001):
dropped from the catalog's state only; their tables and rows stay as they are."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("catalog", "0059_visible_versions"),
        ("identity", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="ApiClient"),
                migrations.DeleteModel(name="UserCatalogAccess"),
            ],
            database_operations=[],
        )
    ]
