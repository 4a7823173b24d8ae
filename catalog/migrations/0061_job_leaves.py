"""Jobs now belong to the jobs app (its 0001): dropped from the catalog's state
only; the table, its rows and its indexes stay as they are."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("catalog", "0060_identity_models_leave"),
        ("jobs", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="Job")],
            database_operations=[],
        )
    ]
