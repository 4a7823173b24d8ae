# The search tokens are computed when a row is sealed, no longer on its insert
# (the audit write adds at most 1 ms to /select). The insert trigger of
# 0010 cost the database ~0.33 ms of a ~0.46 ms INSERT of a selection's row, plus
# the GIN index entries, on the answer's path; the sealer pays it now, off the path,
# a batch at a time. Until it is sealed a row holds no tokens (the CHECK refuses any
# a writer sends), and the filters compute an unsealed row's tokens on the fly
# (audit.querysets.has_tokens), so a row is found the moment it has committed.
#
# The sealing update is the one update the append-only trigger allows; it now also
# sets the tokens itself, from the row's content, whatever the UPDATE sent, so the
# sealer cannot choose them either. Rows unsealed at this migration keep the tokens
# the old trigger gave them (NOT VALID: the CHECK holds for every later row) and are
# given the same ones again when sealed.

from django.db import migrations

SEALING_FUNCTION = """
CREATE OR REPLACE FUNCTION audit_refuse_change() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    sealing text[] := ARRAY['seq', 'prev_hash', 'hash', 'hash_version', 'key_id',
                            'sealed_at', 'search_tokens'];
BEGIN
    IF TG_OP = 'UPDATE'
       AND OLD.hash IS NULL AND OLD.seq IS NULL
       AND NEW.hash IS NOT NULL AND NEW.seq IS NOT NULL
       AND (to_jsonb(NEW) - sealing) = (to_jsonb(OLD) - sealing) THEN
        NEW.search_tokens := audit_search_tokens(
            NEW.event_type, NEW.actor_name, NEW.summary, NEW.input, NEW.output);
        RETURN NEW;
    END IF;
    IF TG_OP = 'DELETE' AND OLD.hash IS NOT NULL
       AND current_setting('quiver.audit_archive', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'audit events are append-only';
END;
$$;
"""

SQL = (
    """
DROP TRIGGER audit_event_search_tokens ON audit_auditevent;
DROP FUNCTION audit_event_fill_tokens();
ALTER TABLE audit_auditevent ALTER COLUMN search_tokens SET DEFAULT '{}';
ALTER TABLE audit_auditevent ADD CONSTRAINT audit_event_tokens_at_seal
    CHECK (hash IS NOT NULL OR search_tokens = '{}') NOT VALID;
"""
    + SEALING_FUNCTION
)

REVERSE_SQL = """
ALTER TABLE audit_auditevent DROP CONSTRAINT audit_event_tokens_at_seal;
ALTER TABLE audit_auditevent ALTER COLUMN search_tokens DROP DEFAULT;
CREATE OR REPLACE FUNCTION audit_refuse_change() RETURNS trigger AS $$
DECLARE
    sealing text[] := ARRAY['seq', 'prev_hash', 'hash', 'hash_version', 'key_id',
                            'sealed_at'];
BEGIN
    IF TG_OP = 'UPDATE'
       AND OLD.hash IS NULL AND OLD.seq IS NULL
       AND NEW.hash IS NOT NULL AND NEW.seq IS NOT NULL
       AND (to_jsonb(NEW) - sealing) = (to_jsonb(OLD) - sealing) THEN
        RETURN NEW;
    END IF;
    IF TG_OP = 'DELETE' AND OLD.hash IS NOT NULL
       AND current_setting('quiver.audit_archive', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'audit events are append-only';
END;
$$ LANGUAGE plpgsql;
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
"""


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0011_query_encoder_event"),
    ]

    operations = [migrations.RunSQL(sql=SQL, reverse_sql=REVERSE_SQL)]
