"""API keys and people's catalog limits move from the catalog app: in Django's state
only. Their tables keep the names the catalog app gave them (``db_table``), so an
existing database changes nothing and keeps every row; catalog's 0060 drops them
from its own state once this has taken them."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

SCOPES = [
    ("agent", "Agent"),
    ("curator", "Curator"),
    ("compliance", "Compliance"),
    ("admin", "Admin"),
]


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("catalog", "0059_visible_versions"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    state_operations = [
        migrations.CreateModel(
            name="ApiClient",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("name", models.CharField(max_length=100, unique=True)),
                ("scope", models.CharField(choices=SCOPES, max_length=12)),
                ("roles", models.JSONField(blank=True, default=list)),
                ("catalogs", models.JSONField(blank=True, default=list)),
                ("all_catalogs", models.BooleanField(default=False)),
                ("allow_unsafe", models.BooleanField(default=False)),
                ("rate_limit_per_minute", models.PositiveIntegerField(blank=True, null=True)),
                ("owner_name", models.CharField(blank=True, default="", max_length=150)),
                ("parent_name", models.CharField(blank=True, default="", max_length=100)),
                ("key_prefix", models.CharField(max_length=12, unique=True)),
                ("key_hash", models.CharField(max_length=64)),
                ("revoked", models.BooleanField(default=False)),
                ("expires", models.DateTimeField(blank=True, null=True)),
                ("created", models.DateTimeField(auto_now_add=True)),
                ("last_used", models.DateTimeField(blank=True, null=True)),
                ("owner", models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="owned_api_clients", to=settings.AUTH_USER_MODEL)),
                ("parent", models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="children", to="identity.apiclient")),
                ("user", models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name="api_client", to=settings.AUTH_USER_MODEL)),
            ],
            options={"db_table": "catalog_apiclient"},
        ),
        migrations.CreateModel(
            name="UserCatalogAccess",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("catalogs", models.JSONField(blank=True, default=list)),
                ("user", models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name="catalog_access", to=settings.AUTH_USER_MODEL)),
            ],
            options={"db_table": "catalog_usercatalogaccess"},
        ),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=state_operations, database_operations=[]
        )
    ]
