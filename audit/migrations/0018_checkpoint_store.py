# Checkpoint lines and the notes beside them in Postgres, for
# QUIVER_AUDIT_CHECKPOINT_STORE=postgres (audit/checkpoint_store.py). The lines are
# append-only like the events: a row trigger refuses UPDATE and DELETE, a statement
# trigger refuses TRUNCATE (except the test suite's flush, quiver.audit_truncate).

from django.db import migrations, models

SQL = """
CREATE FUNCTION audit_checkpoint_refuse_change() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'audit checkpoint lines are append-only';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER audit_checkpoint_line_append_only
    BEFORE UPDATE OR DELETE ON audit_checkpoint_line
    FOR EACH ROW EXECUTE FUNCTION audit_checkpoint_refuse_change();

CREATE FUNCTION audit_checkpoint_refuse_truncate() RETURNS trigger AS $$
BEGIN
    IF current_setting('quiver.audit_truncate', true) = 'on' THEN
        RETURN NULL;
    END IF;
    RAISE EXCEPTION 'audit checkpoint lines are append-only: TRUNCATE refused';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER audit_checkpoint_line_no_truncate
    BEFORE TRUNCATE ON audit_checkpoint_line
    FOR EACH STATEMENT EXECUTE FUNCTION audit_checkpoint_refuse_truncate();
"""

REVERSE_SQL = """
DROP TRIGGER audit_checkpoint_line_no_truncate ON audit_checkpoint_line;
DROP FUNCTION audit_checkpoint_refuse_truncate();
DROP TRIGGER audit_checkpoint_line_append_only ON audit_checkpoint_line;
DROP FUNCTION audit_checkpoint_refuse_change();
"""


class Migration(migrations.Migration):

    dependencies = [
        ("audit", "0017_webhook_changed_event"),
    ]

    operations = [
        migrations.CreateModel(
            name="AuditNote",
            fields=[
                ("name", models.CharField(max_length=64, primary_key=True, serialize=False)),
                ("data", models.JSONField(default=dict)),
                ("updated", models.DateTimeField(auto_now=True)),
            ],
            options={"db_table": "audit_note"},
        ),
        migrations.CreateModel(
            name="CheckpointLine",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("line", models.TextField()),
                ("sig", models.CharField(max_length=128, unique=True)),
                ("prev_sig", models.CharField(max_length=128, unique=True)),
                ("created", models.DateTimeField(auto_now_add=True)),
            ],
            options={"db_table": "audit_checkpoint_line"},
        ),
        migrations.RunSQL(SQL, REVERSE_SQL),
    ]
