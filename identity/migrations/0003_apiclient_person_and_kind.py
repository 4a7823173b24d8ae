"""API clients: the person a client acts for (a key bound to a person, or an
OAuth connection's person, whose current access bounds it and whom the audit
names), and what the client authenticates with (a key, or OAuth tokens)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("identity", "0002_content_types"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="apiclient",
            name="person",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="agent_clients",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AddField(
            model_name="apiclient",
            name="person_name",
            field=models.CharField(blank=True, default="", max_length=150),
        ),
        migrations.AddField(
            model_name="apiclient",
            name="kind",
            field=models.CharField(
                choices=[("key", "API key"), ("oauth", "OAuth connection")],
                default="key",
                max_length=5,
            ),
        ),
    ]
