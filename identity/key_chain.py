"""A key and the keys above it, read in one recursive query: what a key may do
depends on every key it was made from (identity.access, identity.auth)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection

from identity.models import ApiClient

MAX_CHAIN = 32  # keys in a chain read at once; a longer chain fails closed

CHAIN_SQL = """
WITH RECURSIVE chain (id, parent_id, depth) AS (
    SELECT id, parent_id, 1 FROM {keys} WHERE id = %s
    UNION ALL
    SELECT k.id, k.parent_id, chain.depth + 1
    FROM {keys} k JOIN chain ON k.id = chain.parent_id
    WHERE chain.depth < %s
)
SELECT k.id, k.name, k.revoked, k.expires, u.is_active, k.owner_name, o.is_active,
       k.parent_name, k.parent_id, k.owner_id, k.person_id
FROM chain
JOIN {keys} k ON k.id = chain.id
JOIN {users} u ON u.id = k.user_id
LEFT JOIN {users} o ON o.id = k.owner_id
ORDER BY chain.depth
"""


def key_chain(key_id: int) -> list[tuple[Any, ...]]:
    """``key_id`` and the keys above it, nearest first, at most ``MAX_CHAIN``, in
    one query: (id, name, revoked, expires, user active, owner name, owner active
    or None, parent name, parent id, owner id, the person it acts for) each."""
    sql = CHAIN_SQL.format(
        keys=connection.ops.quote_name(ApiClient._meta.db_table),
        users=connection.ops.quote_name(get_user_model()._meta.db_table),
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [key_id, MAX_CHAIN])
        return list(cursor.fetchall())
