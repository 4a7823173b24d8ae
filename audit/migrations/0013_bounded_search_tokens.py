# Bounded search tokens. audit_search_tokens (0007) made the
# trigrams of a row's texts with substr(u, i, 3) over the whole text: in a UTF-8
# database substr walks the text from its start to find character i, so a text of
# n characters cost n^2/2 steps. One /select with a 740 kB query (an object of
# 50,000 keys, which the API took) held the sealer's UPDATE for an hour, and a
# 20,000-character query cost about a second of sealing.
#
# Now the trigrams come from the first TOKEN_TEXT_CHARS characters of each text
# (the actor's name, the summary, the query), and are made in one linear pass
# (the characters split once, each joined to the next two by lead()), so the work
# per row is bounded whatever the row holds: a text filter finds a row by a term
# in that prefix (audit.filters). The tool, reason and selection tokens are
# unchanged (one per element of the row's own output).
#
# The sealing trigger (0012) may be told to use a shorter prefix for the one
# sealing UPDATE (quiver.audit_token_chars, SET LOCAL by audit.sealing when a
# batch runs past its time budget): a row is then sealed with fewer trigrams
# rather than hold the chain. The setting can only shorten the prefix.
#
# Rows sealed before this migration keep the tokens they were given (the column
# is append-only): a superset of what they would get now.

from importlib import import_module

from django.db import migrations

# 0012's trigger, put back on the way down.
SEALING_0012 = import_module("audit.migrations.0012_search_tokens_at_seal")

TOKEN_TEXT_CHARS = 2000

TOKENS_SQL = r"""
CREATE FUNCTION audit_search_tokens_within(
    event_type text, actor_name text, summary text, input jsonb, output jsonb,
    chars integer
) RETURNS text[] LANGUAGE sql IMMUTABLE PARALLEL SAFE COST 1000 AS $$
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
    SELECT g.tri FROM (
        SELECT k || c || pg_catalog.lead(c, 1) OVER w || pg_catalog.lead(c, 2) OVER w
        FROM (VALUES
            (1, 'a:', pg_catalog.upper(pg_catalog."left"(actor_name, chars))),
            (2, 't:', pg_catalog.upper(pg_catalog."left"(summary, chars))),
            (3, 't:', pg_catalog.upper(
                pg_catalog."left"(input #>> '{request,query}', chars)))
        ) AS t(n, k, u),
        pg_catalog.unnest(pg_catalog.string_to_array(u, NULL))
            WITH ORDINALITY AS s(c, i)
        WINDOW w AS (PARTITION BY n ORDER BY i)
    ) AS g(tri)
    WHERE g.tri IS NOT NULL
)
$$;

CREATE OR REPLACE FUNCTION audit_search_tokens(
    event_type text, actor_name text, summary text, input jsonb, output jsonb
) RETURNS text[] LANGUAGE sql IMMUTABLE PARALLEL SAFE COST 1000 AS $$
SELECT audit_search_tokens_within(
    event_type, actor_name, summary, input, output, %(chars)s)
$$;
""".replace("%(chars)s", str(TOKEN_TEXT_CHARS))

SEALING_FUNCTION = """
CREATE OR REPLACE FUNCTION audit_refuse_change() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    sealing text[] := ARRAY['seq', 'prev_hash', 'hash', 'hash_version', 'key_id',
                            'sealed_at', 'search_tokens'];
    chars integer := %(chars)s;
    asked text := current_setting('quiver.audit_token_chars', true);
BEGIN
    IF TG_OP = 'UPDATE'
       AND OLD.hash IS NULL AND OLD.seq IS NULL
       AND NEW.hash IS NOT NULL AND NEW.seq IS NOT NULL
       AND (to_jsonb(NEW) - sealing) = (to_jsonb(OLD) - sealing) THEN
        IF asked ~ '^[0-9]{1,9}$' THEN
            chars := least(chars, asked::integer);
        END IF;
        NEW.search_tokens := audit_search_tokens_within(
            NEW.event_type, NEW.actor_name, NEW.summary, NEW.input, NEW.output,
            chars);
        RETURN NEW;
    END IF;
    IF TG_OP = 'DELETE' AND OLD.hash IS NOT NULL
       AND current_setting('quiver.audit_archive', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'audit events are append-only';
END;
$$;
""".replace("%(chars)s", str(TOKEN_TEXT_CHARS))

# Back to 0007's function and 0012's trigger.
REVERSE_SQL = r"""
CREATE OR REPLACE FUNCTION audit_search_tokens(
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
"""


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0012_search_tokens_at_seal"),
    ]

    operations = [
        migrations.RunSQL(
            sql=TOKENS_SQL + SEALING_FUNCTION,
            reverse_sql=REVERSE_SQL
            + SEALING_0012.SEALING_FUNCTION
            + "DROP FUNCTION audit_search_tokens_within("
            "text, text, text, jsonb, jsonb, integer);",
        ),
    ]
