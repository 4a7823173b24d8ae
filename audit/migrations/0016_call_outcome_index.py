"""A tool call's outcome by the id of its ``started`` event: the worker's
sweep of calls left without an outcome, and the console's pairing of a call's two
events, look it up by this partial expression index. Built concurrently: the
audit table keeps taking rows while it is built."""

import django.db.models.fields.json
import django.db.models.functions.comparison
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("audit", "0015_mcp_refused_event"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="auditevent",
            index=models.Index(
                django.db.models.functions.comparison.Cast(
                    django.db.models.fields.json.KeyTextTransform("call_id", "input"),
                    models.BigIntegerField(),
                ),
                condition=models.Q(
                    ("event_type", "tool_call"), ("input__has_key", "call_id")
                ),
                name="audit_event_call_outcome",
            ),
        ),
    ]
