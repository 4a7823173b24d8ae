# Indexes for the audit list's filters at a million events (bench/audit_console.py).
#
# audit_search_tokens(...) lists, for one event, the words its filters look for:
# p:<tool offered>, x:<tool left out>, r:<reason left out> (selections only), s:<selection id> (of a
# validation), a:<trigram of the actor's name> and t:<trigram of the summary or the
# query>, trigrams upper-cased as Django's icontains compares them. One GIN index
# over that list serves every rare filter (array containment is exact in GIN: no
# recheck of the JSON). It calls only built-in functions, so it is safe under any
# search_path (ANALYZE, pg_dump). Three partial indexes serve the yes/no filters
# that match few events. None of them is on a sealing column, and all of them take
# the sealer's one UPDATE per row like any index.

import django.contrib.postgres.fields
import django.contrib.postgres.indexes
import django.db.models.functions.comparison
from django.db import migrations, models

import audit.querysets

TOKENS_SQL = r"""
CREATE FUNCTION audit_search_tokens(
    event_type text, actor_name text, summary text, input jsonb, output jsonb
) RETURNS text[] LANGUAGE sql IMMUTABLE PARALLEL SAFE COST 100000 AS $$
SELECT ARRAY(
    SELECT 'p:' || (e ->> 'name') FROM pg_catalog.jsonb_array_elements(
        CASE WHEN pg_catalog.jsonb_typeof(output -> 'tools') = 'array'
             THEN output -> 'tools' ELSE '[]'::jsonb END) AS e
    WHERE event_type = 'selection' AND pg_catalog.jsonb_typeof(e -> 'name') = 'string'
    UNION
    SELECT k || (e ->> f) FROM pg_catalog.jsonb_array_elements(
        CASE WHEN pg_catalog.jsonb_typeof(output -> 'excluded') = 'array'
             THEN output -> 'excluded' ELSE '[]'::jsonb END) AS e,
        (VALUES ('x:', 'name'), ('r:', 'reason')) AS w(k, f)
    WHERE event_type = 'selection' AND pg_catalog.jsonb_typeof(e -> f) = 'string'
    UNION
    SELECT 's:' || (d ->> 'selection_id') FROM (VALUES (input), (output)) AS v(d)
    WHERE event_type = 'validation'
      AND pg_catalog.jsonb_typeof(d -> 'selection_id') = 'string'
    UNION
    SELECT k || pg_catalog.substr(u, i, 3)
    FROM (VALUES ('a:', pg_catalog.upper(actor_name)),
                 ('t:', pg_catalog.upper(summary)),
                 ('t:', pg_catalog.upper(input #>> '{request,query}'))) AS t(k, u),
        pg_catalog.generate_series(1, pg_catalog.length(u) - 2) AS i
)
$$;

-- The trigrams of a searched text, the same way (for the query side only).
CREATE FUNCTION audit_trigrams(prefix text, value text) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
SELECT ARRAY(
    SELECT DISTINCT prefix || pg_catalog.substr(u, i, 3)
    FROM (SELECT pg_catalog.upper(value) AS u) AS t,
        pg_catalog.generate_series(1, pg_catalog.length(u) - 2) AS i
)
$$;
"""

DROP_SQL = """
DROP FUNCTION audit_trigrams(text, text);
DROP FUNCTION audit_search_tokens(text, text, text, jsonb, jsonb);
"""


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0006_tool_and_access_events"),
    ]

    operations = [
        migrations.RunSQL(sql=TOKENS_SQL, reverse_sql=DROP_SQL),
        migrations.AddIndex(
            model_name="auditevent",
            index=django.contrib.postgres.indexes.GinIndex(
                audit.querysets.SearchTokens(), name="audit_event_search"
            ),
        ),
        migrations.AddIndex(
            model_name="auditevent",
            index=models.Index(
                condition=models.Q(
                    ("event_type", "selection"),
                    ("output__contains", {"degraded": True}),
                ),
                fields=["id"],
                name="audit_event_degraded",
            ),
        ),
        migrations.AddIndex(
            model_name="auditevent",
            index=models.Index(
                condition=models.Q(("event_type", "selection"), ("output__tools", [])),
                fields=["id"],
                name="audit_event_no_tools",
            ),
        ),
        migrations.AddIndex(
            model_name="auditevent",
            index=models.Index(
                condition=models.Q(
                    ("event_type", "validation"), ("output__contains", {"valid": False})
                ),
                fields=["id"],
                name="audit_event_invalid",
            ),
        ),
        # Statistics of the new index expression now, so the planner picks the
        # index for rare tokens (without them it may walk the table newest first).
        migrations.RunSQL(
            sql="ANALYZE audit_auditevent", reverse_sql=migrations.RunSQL.noop
        ),
    ]
