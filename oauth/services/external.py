"""The connection a company token acts through: one live connection per client
and person, its policy the token's scopes within what the person holds. It is
made, or changed, only when that policy differs from the one it has (each time
an ``oauth_consent`` row, ``via`` "external token"). Revoking it in Quiver stops
every token issued before the revocation; a token issued later is a new
connection (the company's server, which issued it, decides that)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from oauth.models import Connection, OAuthClient
from oauth.services.connections import Policy, approve_connection, policy_of

VIA = "external token"


def revoked_since(client: OAuthClient, person: Any, issued_at: int) -> bool:
    """Whether a connection of this client and person was revoked after a
    token issued at ``issued_at`` (seconds since the epoch)."""
    issued = datetime.fromtimestamp(issued_at, tz=UTC)
    return Connection.objects.filter(
        client=client, person=person, revoked__gte=issued
    ).exists()


def connection_for(
    client: OAuthClient, person: Any, policy: Policy, scope: str
) -> Connection:
    live = (
        Connection.objects.select_related(
            "client", "principal__user", "principal__owner", "principal__person"
        )
        .filter(client=client, person=person, revoked__isnull=True)
        .first()
    )
    if live is not None and policy_of(live.principal) == policy and live.scope == scope:
        return live
    approve_connection(client, person=person, policy=policy, scope=scope, via=VIA)
    return (
        Connection.objects.select_related(
            "client", "principal__user", "principal__owner", "principal__person"
        )
        .filter(client=client, person=person, revoked__isnull=True)
        .get()
    )
