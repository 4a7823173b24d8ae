"""Django's PostgreSQL backend, whose per-request health check costs no round trip.

With ``CONN_HEALTH_CHECKS`` Django checks a persistent connection before a
request's first query by running ``SELECT 1``: one more round trip on every
request. An idle connection that the server has closed (a restart, a terminated
backend) has something to read on its socket: the server's last words and the
end of the stream. So a connection that psycopg holds open and idle, with
nothing to read, is usable without asking the server; anything to read, or any
doubt, falls back to Django's ``SELECT 1``.
"""

from __future__ import annotations

import select

from django.db.backends.postgresql import base
from psycopg import pq


class DatabaseWrapper(base.DatabaseWrapper):
    def is_usable(self) -> bool:
        conn = self.connection
        if conn is None or conn.closed or conn.broken:
            return False
        pgconn = conn.pgconn
        idle = pgconn.transaction_status == pq.TransactionStatus.IDLE
        if pgconn.status != pq.ConnStatus.OK or not idle:
            return bool(super().is_usable())
        try:
            readable, _, _ = select.select([pgconn.socket], [], [], 0)
        except (OSError, ValueError):
            return False
        return True if not readable else bool(super().is_usable())
