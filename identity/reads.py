"""The key's read on every API request, its SQL made once per process
(config.fast.rows): a key with its service user and owner, by key prefix.

It reads the current rows on every call, as the queryset it replaces did: nothing
is cached across requests, so a revoked key or a deactivated person counts from the
very next request."""

from __future__ import annotations

import functools
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection

from config.fast.rows import Columns, column, fetch_one, split
from identity.models import ApiClient

# What a request reads of a key's service user and of its owner (who acts, whether
# they are active); any other field loads on first use, as with ``only()``.
USER_FIELDS = ("id", "username", "is_active", "is_staff", "is_superuser")


@functools.cache
def _client_read() -> tuple[str, tuple[Columns, Columns, Columns]]:
    """The key's row, its service user's and its owner's, by key prefix (made once
    per process: the ORM's compiler was most of authentication's CPU)."""
    user_model = get_user_model()
    parts = (
        Columns(ApiClient, "c"),
        Columns(user_model, "u", only=USER_FIELDS),
        Columns(user_model, "o", only=USER_FIELDS),
    )
    quote = connection.ops.quote_name
    clients = quote(ApiClient._meta.db_table)
    users = quote(user_model._meta.db_table)
    pk = quote(str(user_model._meta.pk.column))  # type: ignore[union-attr]
    sql = (
        f"SELECT {', '.join(part.sql() for part in parts)} FROM {clients} c "
        f"JOIN {users} u ON u.{pk} = c.{column(ApiClient, 'user')} "
        f"LEFT JOIN {users} o ON o.{pk} = c.{column(ApiClient, 'owner')} "
        f"WHERE c.{column(ApiClient, 'key_prefix')} = %s"
    )
    return sql, parts


def client_by_prefix(prefix: str) -> ApiClient | None:
    """The client of a key prefix with its user and owner, as
    ``select_related("user", "owner")`` would give it (``user.api_client`` is the
    client: no later query)."""
    sql, (clients, users, owners) = _client_read()
    row = fetch_one(sql, [prefix])
    if row is None:
        return None
    own, user_row, owner_row, _ = split(row, (clients, users, owners))
    client: Any = clients.instance(own)
    user = users.instance(user_row)
    owner = owners.instance(owner_row) if client.owner_id is not None else None
    fields = ApiClient._meta
    fields.get_field("user").set_cached_value(client, user)  # type: ignore[union-attr]
    fields.get_field("user").remote_field.set_cached_value(user, client)
    fields.get_field("owner").set_cached_value(client, owner)  # type: ignore[union-attr]
    return client
