"""Create (or refresh) the database role the web and worker connect as.

Migrations run as the tables' owner; the app runs as this role, which may read and
write the other tables but, on the audit table, only SELECT, INSERT and the sealing
UPDATE of the chain columns (the trigger allows that update once per row, from empty
to set); on the checkpoint lines' table, only SELECT and INSERT. It cannot UPDATE
content, DELETE, TRUNCATE, or alter those tables or their triggers. Run it after
every migrate (new tables need their grants).
"""

from __future__ import annotations

import re
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection, transaction
from psycopg import sql

from config.env import env_secret

AUDIT_TABLE = "audit_auditevent"
CHECKPOINT_TABLE = "audit_checkpoint_line"
SEALING_COLUMNS = ("seq", "prev_hash", "hash", "hash_version", "key_id", "sealed_at")


def _statements(role: str, password: str, database: str) -> list[sql.Composable]:
    who, table = sql.Identifier(role), sql.Identifier(AUDIT_TABLE)
    lines = sql.Identifier(CHECKPOINT_TABLE)
    columns = sql.SQL(", ").join(sql.Identifier(c) for c in SEALING_COLUMNS)
    return [
        sql.SQL("ALTER ROLE {} LOGIN PASSWORD {}").format(who, sql.Literal(password)),
        sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(
            sql.Identifier(database), who
        ),
        sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(who),
        sql.SQL(
            "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {}"
        ).format(who),
        sql.SQL("GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {}").format(
            who
        ),
        # The worker builds a partial HNSW index per (model, catalog) at run time:
        # only a table's owner may index it, in a schema it may create in. Neither
        # gives any right on the audit table, whose owner stays the migrating role.
        sql.SQL("ALTER TABLE {} OWNER TO {}").format(
            sql.Identifier("catalog_toolembedding"), who
        ),
        sql.SQL("GRANT CREATE ON SCHEMA public TO {}").format(who),
        sql.SQL("REVOKE ALL ON {} FROM {}").format(table, who),
        sql.SQL("GRANT SELECT, INSERT ON {} TO {}").format(table, who),
        sql.SQL("GRANT UPDATE ({}) ON {} TO {}").format(columns, table, who),
        # Checkpoint lines kept in Postgres (QUIVER_AUDIT_CHECKPOINT_STORE) are
        # only ever appended and read.
        sql.SQL("REVOKE ALL ON {} FROM {}").format(lines, who),
        sql.SQL("GRANT SELECT, INSERT ON {} TO {}").format(lines, who),
    ]


class Command(BaseCommand):
    help = (
        "Create or refresh the app's database role: full use of the other tables, "
        "only INSERT, SELECT and sealing on the audit table. Password from "
        "QUIVER_APP_DB_PASSWORD (or _FILE)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("role", help="the role name, e.g. quiver_app")

    def handle(self, *args: Any, **options: Any) -> None:
        role = options["role"]
        if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", role):
            raise CommandError("role: lower-case letters, digits and _ only")
        password = env_secret("QUIVER_APP_DB_PASSWORD")
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role])
            if cursor.fetchone() is None:
                cursor.execute(sql.SQL("CREATE ROLE {}").format(sql.Identifier(role)))
            for statement in _statements(
                role, password, connection.settings_dict["NAME"]
            ):
                cursor.execute(statement)
        self.stdout.write(
            f"Role {role}: may only INSERT and SELECT (and seal) audit rows."
        )
