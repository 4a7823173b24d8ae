"""What the audit records of an agent acting for a person (audit.acting).

Every row written by a key bound to a person, or by an OAuth connection's
token, carries ``acting_for``: the person (name and id), the key or connection
it acted through (name and id), and for a token its OAuth client (id and name)
and the token's own id (``jti``). The person a caller acts for is
``identity.access.acting_person``; this module only says it for the record."""

from __future__ import annotations

from typing import Any

from audit.actors import Actor
from identity.choices import ClientKind

# Set on the request's user by the token authentication (oauth.auth): the id of
# the access token the request came with.
TOKEN_ID = "_quiver_oauth_token_id"


def describe(actor: Actor) -> dict[str, Any] | None:
    """``acting_for`` for ``actor``'s rows; None when it acts for nobody else."""
    client = getattr(actor, "api_client", None)
    if client is None or not client.person_name:
        return None
    person = client.person if client.person_id is not None else None
    described: dict[str, Any] = {
        "person": person.get_username() if person is not None else client.person_name,
        "person_id": client.person_id,
        "key": client.name,
        "key_id": client.pk,
    }
    if client.kind != ClientKind.OAUTH:
        return described
    connection = getattr(client, "oauth_connection", None)
    if connection is not None:
        described["connection"] = str(connection.public_id)
        described["oauth_client"] = {
            "id": connection.client.client_id,
            "name": connection.client.name,
        }
    token_id = getattr(actor, TOKEN_ID, None)
    if token_id:
        described["token_id"] = token_id
    return described
