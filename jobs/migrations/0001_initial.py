"""The Job model moves from the catalog app: in Django's state only. Its table keeps
the name the catalog app gave it (``db_table``), with its rows and its indexes;
catalog's 0061 drops it from its own state once this has taken it."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

KINDS = [
    ("import", "Import"),
    ("reindex", "Re-index"),
    ("bulk", "Bulk edit"),
    ("sync", "Source sync"),
]
STATES = [
    ("queued", "Queued"),
    ("running", "Running"),
    ("succeeded", "Succeeded"),
    ("failed", "Failed"),
]


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("catalog", "0060_identity_models_leave"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    state_operations = [
        migrations.CreateModel(
            name="Job",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("kind", models.CharField(choices=KINDS, max_length=10)),
                ("state", models.CharField(choices=STATES, default="queued", max_length=10)),
                ("total", models.PositiveIntegerField(default=0)),
                ("done", models.PositiveIntegerField(default=0)),
                ("counts", models.JSONField(blank=True, default=dict)),
                ("items", models.JSONField(blank=True, default=list)),
                ("errors", models.JSONField(blank=True, default=list)),
                ("payload", models.JSONField(blank=True, null=True)),
                ("options", models.JSONField(blank=True, default=dict)),
                ("created", models.DateTimeField(auto_now_add=True, db_index=True)),
                ("started", models.DateTimeField(blank=True, null=True)),
                ("heartbeat", models.DateTimeField(blank=True, null=True)),
                ("worker_host", models.CharField(blank=True, default="", max_length=255)),
                ("worker_pid", models.PositiveIntegerField(blank=True, null=True)),
                ("finished", models.DateTimeField(blank=True, null=True)),
                ("catalog", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="jobs", to="catalog.catalog")),
                ("created_by", models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="+", to=settings.AUTH_USER_MODEL)),
            ],
            options={
                "db_table": "catalog_job",
                "ordering": ["-id"],
                "indexes": [
                    models.Index(
                        condition=models.Q(("state__in", ["queued", "running"])),
                        fields=["state", "created"],
                        name="job_waiting",
                    )
                ],
            },
        ),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=state_operations, database_operations=[]
        )
    ]
