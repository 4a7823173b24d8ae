"""Connections: a person approves a client, the client acts for them.

A connection acts through an API client of kind ``oauth`` (its principal): the
agent scope, the catalogs, roles and unsafe permission chosen at consent, owned
by and bound to the person. Its access at each request is that grant
intersected with what the person holds then (``identity.access.within_person``);
nobody grants more than they hold (``identity.access.key_within``, the rule for
keys). One live connection per person and client: approving again changes it.
Every approval, refusal and revocation is an audit row in its transaction."""

from __future__ import annotations

import re
import secrets
import uuid
from dataclasses import asdict, dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

from audit.actors import Actor
from audit.choices import EventType
from audit.services import record_event
from identity.access import ALL_CATALOGS, KeyGrant, access_for, key_within
from identity.choices import ApiScope, ClientKind
from identity.models import ApiClient
from oauth.models import Connection, OAuthClient, TokenFamily

NAME_CHARS = re.compile(r"[^A-Za-z0-9_.-]+")
REVOKE_RULE = (
    "connection: a person revokes their own connections; admins revoke anyone's"
)


@dataclass(frozen=True)
class Policy:
    """What a connection's agent may see: catalogs (None: every catalog the
    person has), roles, and whether unsafe tools may be offered."""

    catalogs: tuple[str, ...] | None
    roles: tuple[str, ...]
    allow_unsafe: bool

    def grant(self) -> KeyGrant:
        return KeyGrant(
            scope=ApiScope.AGENT.value,
            catalogs=self.catalogs,
            roles=self.roles,
            allow_unsafe=self.allow_unsafe,
            rate_limit=None,
        )

    def described(self) -> dict[str, Any]:
        shown = asdict(self)
        shown["catalogs"] = ALL_CATALOGS if self.catalogs is None else self.catalogs
        return shown


def policy_problem(person: Any, policy: Policy) -> str:
    """'' when ``person`` holds everything ``policy`` gives, else "field: why"."""
    return key_within(access_for(person), policy.grant())


def policy_of(principal: ApiClient) -> Policy:
    return Policy(
        catalogs=None if principal.all_catalogs else tuple(principal.catalogs),
        roles=tuple(principal.roles),
        allow_unsafe=principal.allow_unsafe,
    )


def approve_connection(
    client: OAuthClient,
    *,
    person: Any,
    policy: Policy,
    scope: str,
    request_id: uuid.UUID | None = None,
    via: str = "consent",
) -> Connection:
    """The person's live connection to ``client`` with this policy (made, or
    changed); 403 naming the field when the policy is more than they hold."""
    problem = policy_problem(person, policy)
    if problem:
        raise PermissionDenied(problem)
    with transaction.atomic():
        connection = (
            Connection.objects.select_for_update()
            .select_related("principal")
            .filter(client=client, person=person, revoked__isnull=True)
            .first()
        )
        before = None
        if connection is None:
            connection = _new_connection(client, person, policy, scope)
        else:
            before = {**policy_of(connection.principal).described()}
            before["scope"] = connection.scope
            _change(connection, policy, scope)
        _record_consent(connection, person, policy, before, request_id, via)
    return connection


def _new_connection(
    client: OAuthClient, person: Any, policy: Policy, scope: str
) -> Connection:
    name = _principal_name(client, person)
    user = get_user_model().objects.create_user(username=f"api:{name}"[:150])
    user.set_unusable_password()
    user.save(update_fields=["password"])
    principal = ApiClient(
        name=name,
        user=user,
        kind=ClientKind.OAUTH,
        scope=ApiScope.AGENT,
        owner=person,
        owner_name=person.get_username(),
        person=person,
        person_name=person.get_username(),
        key_prefix=f"o{secrets.token_hex(5)}"[:10],
        key_hash="",  # no key: it authenticates with tokens only
    )
    _set_policy(principal, policy)
    principal.full_clean(exclude=["user", "owner", "parent", "person", "key_hash"])
    principal.save()
    connection = Connection(
        client=client,
        person=person,
        person_name=person.get_username(),
        principal=principal,
        scope=scope,
    )
    connection.save()
    return connection


def _principal_name(client: OAuthClient, person: Any) -> str:
    """A readable, unique name: oauth.<client>.<person>.<random>."""
    label = NAME_CHARS.sub("-", client.name).strip("-")[:30] or "client"
    who = NAME_CHARS.sub("-", person.get_username())[:40]
    return f"oauth.{label}.{who}.{secrets.token_hex(4)}"


def _set_policy(principal: ApiClient, policy: Policy) -> list[str]:
    values = {
        "catalogs": list(policy.catalogs or ()),
        "all_catalogs": policy.catalogs is None,
        "roles": list(policy.roles),
        "allow_unsafe": policy.allow_unsafe,
    }
    changed = [
        name for name, value in values.items() if getattr(principal, name) != value
    ]
    for name in changed:
        setattr(principal, name, values[name])
    return changed


def _change(connection: Connection, policy: Policy, scope: str) -> None:
    fields = _set_policy(connection.principal, policy)
    if fields:
        connection.principal.save(update_fields=fields)
    if connection.scope != scope:
        connection.scope = scope
        connection.save(update_fields=["scope", "updated"])


def _record_consent(
    connection: Connection,
    person: Any,
    policy: Policy,
    before: dict[str, Any] | None,
    request_id: uuid.UUID | None,
    via: str,
) -> None:
    client = connection.client
    record_event(
        EventType.OAUTH_CONSENT,
        actor=person,
        request_id=request_id,
        summary=f"{person.get_username()} approved {client.name} ({via})",
        input={"client": client_record(client), "via": via, "before": before},
        output={
            "approved": True,
            "connection": str(connection.public_id),
            "key_id": connection.principal_id,
            "scope": connection.scope,
            "policy": policy.described(),
        },
    )


def record_denial(
    client: OAuthClient,
    *,
    person: Any,
    scope: str,
    request_id: uuid.UUID | None = None,
) -> None:
    """A person said no to a client: recorded, nothing granted."""
    record_event(
        EventType.OAUTH_CONSENT,
        actor=person,
        request_id=request_id,
        summary=f"{person.get_username()} denied {client.name}",
        input={"client": client_record(client), "scope": scope},
        output={"approved": False},
    )


def client_record(client: OAuthClient) -> dict[str, Any]:
    """An OAuth client as audit rows name it."""
    return {"id": client.client_id, "name": client.name, "kind": client.kind}


def may_revoke(actor: Actor, connection: Connection) -> bool:
    """A person revokes their own connections; an admin anyone's."""
    return connection.person_id == getattr(actor, "pk", None) or (
        access_for(actor).is_admin and not access_for(actor).is_key
    )


def revoke_connection(
    connection: Connection, *, actor: Actor, request_id: uuid.UUID | None = None
) -> Connection:
    """Stop a connection for good: its principal, its families, so every token
    issued for it (idempotent: revoking twice records one event)."""
    if actor is not None and not may_revoke(actor, connection):
        raise PermissionDenied(REVOKE_RULE)
    with transaction.atomic():
        connection = Connection.objects.select_for_update().get(pk=connection.pk)
        if connection.revoked is not None:
            return connection
        now = timezone.now()
        connection.revoked = now
        connection.save(update_fields=["revoked", "updated"])
        ApiClient.objects.filter(pk=connection.principal_id).update(revoked=True)
        TokenFamily.objects.filter(connection=connection, revoked__isnull=True).update(
            revoked=now, revoked_reason="connection revoked"
        )
        record_event(
            EventType.OAUTH_REVOKED,
            actor=actor,
            request_id=request_id,
            summary=f"connection of {connection.person_name} to "
            f"{connection.client.name} revoked",
            input={"client": client_record(connection.client)},
            output={
                "connection": str(connection.public_id),
                "key_id": connection.principal_id,
                "person": connection.person_name,
            },
        )
    return connection
