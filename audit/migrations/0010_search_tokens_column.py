# The audit list's search tokens stored in a column (bench/audit_console.py, issues
# 9 and 10): the GIN index of 0007 was over the expression audit_search_tokens(...),
# so every recheck of a common filter and every newest-first walk re-parsed the
# row's JSON, and the planner had no statistics on the tokens. Now each row keeps
# its tokens in search_tokens (GIN on the column): a walk reads an array, and
# ANALYZE keeps per-token frequencies, so a common tool walks the primary key and
# a rare one takes the index.
#
# Filled once here by one table rewrite (a generated column turned into a plain
# one: no dead rows, no trigger to disable), then on every INSERT by a trigger, the
# same computation the expression index did per insert. Not a generated column:
# Postgres shows a generated column as NULL to BEFORE UPDATE triggers, so the
# append-only trigger (0004), which compares the whole row before and after, would
# refuse the sealing update. As a plain column it is part of that comparison, so
# nobody can change it after the insert either.

import django.contrib.postgres.fields
import django.contrib.postgres.indexes
from django.db import migrations, models

SQL = """
ALTER TABLE audit_auditevent ADD COLUMN search_tokens text[]
    GENERATED ALWAYS AS (
        audit_search_tokens(event_type, actor_name, summary, input, output)
    ) STORED;
ALTER TABLE audit_auditevent ALTER COLUMN search_tokens DROP EXPRESSION;
ALTER TABLE audit_auditevent ALTER COLUMN search_tokens SET NOT NULL;
-- Ten times the default: ANALYZE then keeps the frequencies of about 2,000 tokens
-- (down to 1 event in 1,000; at 100, 1,000 tokens down to 1 in 20), so a token it
-- has not seen is priced as rare and served by the index, not by a walk.
ALTER TABLE audit_auditevent ALTER COLUMN search_tokens SET STATISTICS 1000;

-- search_path fixed at creation: a restore (COPY runs this trigger) may run with
-- an empty one.
CREATE FUNCTION audit_event_fill_tokens() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    NEW.search_tokens := audit_search_tokens(
        NEW.event_type, NEW.actor_name, NEW.summary, NEW.input, NEW.output);
    RETURN NEW;
END;
$$;
CREATE TRIGGER audit_event_search_tokens
    BEFORE INSERT ON audit_auditevent
    FOR EACH ROW EXECUTE FUNCTION audit_event_fill_tokens();

DROP INDEX audit_event_search;
CREATE INDEX audit_event_search ON audit_auditevent USING gin (search_tokens);
"""

REVERSE_SQL = """
DROP INDEX audit_event_search;
DROP TRIGGER audit_event_search_tokens ON audit_auditevent;
DROP FUNCTION audit_event_fill_tokens();
ALTER TABLE audit_auditevent DROP COLUMN search_tokens;
CREATE INDEX audit_event_search ON audit_auditevent USING gin (
    audit_search_tokens(event_type, actor_name, summary, input, output));
"""


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0009_rollup"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(sql=SQL, reverse_sql=REVERSE_SQL),
            ],
            state_operations=[
                migrations.RemoveIndex(
                    model_name="auditevent", name="audit_event_search"
                ),
                migrations.AddField(
                    model_name="auditevent",
                    name="search_tokens",
                    field=django.contrib.postgres.fields.ArrayField(
                        base_field=models.TextField(), default=list, editable=False
                    ),
                ),
                migrations.AddIndex(
                    model_name="auditevent",
                    index=django.contrib.postgres.indexes.GinIndex(
                        fields=["search_tokens"], name="audit_event_search"
                    ),
                ),
            ],
        ),
        # Per-token statistics now, so the planner prices common and rare tokens.
        migrations.RunSQL(
            sql="ANALYZE audit_auditevent", reverse_sql=migrations.RunSQL.noop
        ),
    ]
