"""Removing people's connections: their person deactivated or deleted, their
source deleted or its authorization changed, their token refused for good.

In the caller's transaction: one ``removed`` event per connection, naming why,
and the row gone. Once that commits, Quiver asks the authorization server to
revoke the tokens (RFC 7009) where it has a revocation endpoint, best effort:
the tokens are gone from the vault whatever the server says."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import transaction
from django.db.models import QuerySet

from audit.actors import Actor
from vault import crypto, events, oauth
from vault.models import Connection, SourceAuthorization

log = logging.getLogger(__name__)


def remove_connections(
    connections: QuerySet[Connection], *, reason: str, actor: Actor
) -> int:
    """Remove these connections (audited, revoked after commit); how many."""
    removed = 0
    rows = connections.select_related("person", "source__catalog")
    with transaction.atomic():
        for row in rows.select_for_update(of=("self",)):
            removed += _remove_one(row, reason, actor)
    return removed


def _remove_one(row: Connection, reason: str, actor: Actor) -> int:
    revocation = revocation_of(row)
    events.record(
        events.REMOVED,
        row.source,
        actor=actor,
        person=row.person,
        connection=row,
        issuer=row.issuer,
        reason=reason,
    )
    row.delete()
    transaction.on_commit(revocation, robust=True)
    return 1


def revocation_of(row: Connection) -> Callable[[], bool]:
    """What revokes ``row``'s tokens at its server (read now, while the source's
    authorization and the row still exist; run later): whether it confirmed."""
    auth = SourceAuthorization.objects.filter(source_id=row.source_id).first()
    if auth is None or auth.client_id != row.client_id:
        return lambda: False
    try:
        client = oauth.Client.of(auth)
        tokens = [
            (crypto.decrypt(row.refresh_encrypted), "refresh_token"),
            (crypto.decrypt(row.access_encrypted), "access_token"),
        ]
    except crypto.Unreadable:
        return lambda: False

    def revoke() -> bool:
        said = [oauth.revoke(client, token, hint) for token, hint in tokens if token]
        if not any(said):
            log.info("connection %s: the server revoked nothing", row.public_id)
        return any(said)

    revoke.__qualname__ = "revoke an upstream connection's tokens"
    return revoke
