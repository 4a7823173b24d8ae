"""OAuth's audit events, and the filter by person: an index on the person
behind each row (the person an agent acted for, ``input.acting_for.person``,
else the actor's own name), built concurrently so the table keeps taking rows."""

import django.db.models.fields.json
import django.db.models.functions.comparison
from django.conf import settings
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ('audit', '0019_sign_in_events'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterField(
            model_name='auditevent',
            name='event_type',
            field=models.CharField(choices=[('selection', 'Selection'), ('validation', 'Tool-call validation'), ('settings', 'Selection settings change'), ('client_created', 'API key created'), ('client_revoked', 'API key revoked'), ('client_rotated', 'API key rotated'), ('client_changed', 'API key changed'), ('catalog_created', 'Catalog created'), ('tool_changed', 'Tool created, changed or deleted'), ('access_changed', "A person's groups or catalogs changed"), ('key_rotated', 'Audit key rotated'), ('query_encoder', 'Static query encoder built'), ('source_changed', 'Catalog source added, changed or removed'), ('tool_call', 'Tool call through Quiver'), ('approval', 'Tool call approval requested, decided or expired'), ('labels_changed', 'Labelled requests changed'), ('mcp_refused', 'Request refused at /mcp'), ('webhook_changed', 'Webhook added, changed, rotated, removed or replayed'), ('sign_in', 'Person signed in'), ('sign_in_refused', 'Sign-in refused'), ('sign_out', 'Person signed out'), ('sign_in_settings', 'Single sign-on mapping or password sign-in changed'), ('oauth_client', 'OAuth client registered'), ('oauth_consent', 'OAuth client approved or denied by a person'), ('oauth_token', 'OAuth tokens issued for an approval'), ('oauth_revoked', 'OAuth connection or token revoked'), ('oauth_refused', 'OAuth request or token refused')], max_length=20),
        ),
        AddIndexConcurrently(
            model_name='auditevent',
            index=models.Index(django.db.models.functions.comparison.Coalesce(django.db.models.fields.json.KeyTextTransform('person', django.db.models.fields.json.KeyTextTransform('acting_for', 'input')), models.F('actor_name'), output_field=models.TextField()), models.F('id'), name='audit_event_person'),
        ),
    ]
