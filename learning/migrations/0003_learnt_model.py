import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("learning", "0002_evaluation"),
        ("catalog", "0051_apiclient_parent_and_all_catalogs"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="LearntModel",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("version", models.PositiveIntegerField()),
                ("state", models.CharField(choices=[("queued", "Queued"), ("running", "Running"), ("succeeded", "Succeeded"), ("failed", "Failed")], default="queued", max_length=10)),
                ("progress", models.PositiveSmallIntegerField(default=0)),
                ("error", models.TextField(blank=True, default="")),
                ("apply", models.BooleanField(default=False)),
                ("accept_regression", models.TextField(blank=True, default="")),
                ("embedding_model", models.CharField(blank=True, default="", max_length=200)),
                ("params", models.JSONField(blank=True, default=dict)),
                ("examples", models.JSONField(blank=True, default=list)),
                ("vectors", models.BinaryField(blank=True, default=b"")),
                ("cv", models.JSONField(blank=True, default=dict)),
                ("proposed_settings", models.JSONField(blank=True, null=True)),
                ("applied_settings_version", models.PositiveIntegerField(blank=True, null=True)),
                ("created", models.DateTimeField(auto_now_add=True, db_index=True)),
                ("finished", models.DateTimeField(blank=True, null=True)),
                ("catalog", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="learnt_models", to="catalog.catalog")),
                ("created_by", models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="+", to=settings.AUTH_USER_MODEL)),
            ],
            options={
                "ordering": ["-id"],
                "constraints": [models.UniqueConstraint(fields=("catalog", "version"), name="one_learnt_model_version")],
            },
        ),
    ]
