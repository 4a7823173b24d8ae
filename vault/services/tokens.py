"""A person's token for a call, and for a sync.

``credential_for(caller, source)`` is the call path's one question: None for a
source that does not ask each person for OAuth (its shared headers are sent, as
ever); for one that does, the access token of the person the caller acts for
(``vault.acting.person_for``), or ``NeedsAuthorization`` naming why there is
none. Never another person's token, never a shared header.

A token is used only while it is still bound: its person active, its source's
authorization naming the same resource, issuer and client, and the source's URL
within that resource. It is refreshed ``QUIVER_VAULT_REFRESH_MARGIN_SECONDS``
before it expires, one refresh at a time per connection: the refresh holds the
connection's row lock, and whoever waited on it finds the new token. A refresh
the server refuses removes the connection (audited): its person connects again."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from mcp.shared.auth_utils import check_resource_allowed, resource_url_from_server_url

from audit.actors import Caller
from sources.models import Source
from vault import crypto, oauth
from vault.acting import person_for
from vault.models import Connection, SourceAuthorization
from vault.services.removal import remove_connections

LAST_USED_EVERY = timedelta(minutes=1)


class NeedsAuthorization(Exception):
    """No token of the caller's person for the source; ``reason`` says why and
    ``connectable``: whether a person can fix it by connecting."""

    def __init__(self, reason: str, *, connectable: bool = True) -> None:
        self.reason = reason
        self.connectable = connectable
        super().__init__(reason)


class AuthorizationServerDown(Exception):
    """The token expired and the server that refreshes it did not answer."""


@dataclass(frozen=True)
class Credential:
    """What a call to a personal source sends, and whose it is (for the audit)."""

    headers: dict[str, str] = field(repr=False)
    person: str
    connection: str
    connection_id: int
    fingerprint: str

    @property
    def account(self) -> dict[str, Any]:
        return {"kind": "person", "person": self.person, "connection": self.connection}


def is_personal(source: Source) -> bool:
    return SourceAuthorization.objects.filter(source=source).exists()


def authorization_of(source: Source) -> SourceAuthorization | None:
    """The source's authorization, None for a source with shared headers (read
    once per source object: the call path's read joins it)."""
    try:
        return source.authorization  # type: ignore[no-any-return]
    except SourceAuthorization.DoesNotExist:
        return None


def credential_for(caller: Caller, source: Source) -> Credential | None:
    """The credential of a call by ``caller`` to ``source`` (see the module)."""
    auth = authorization_of(source)
    if auth is None:
        return None
    person = person_for(caller)
    if person is None:
        raise NeedsAuthorization(
            f"authorization: source {source.name!r} runs as each person, and this "
            "caller acts for no person (use a key bound to a person)",
            connectable=False,
        )
    connection = Connection.objects.filter(person=person, source=source).first()
    if connection is None:
        raise NeedsAuthorization(
            f"authorization: {person.get_username()} has not connected their "
            f"account at source {source.name!r}; connect it, then call again"
        )
    if not bound(connection, auth, source):
        raise NeedsAuthorization(
            f"authorization: source {source.name!r} changed its authorization "
            "since the account was connected; connect it again"
        )
    return _credential(fresh(connection, auth), person)


def bound(connection: Connection, auth: SourceAuthorization, source: Source) -> bool:
    """Whether the connection's token may go to the source as it is now."""
    url = resource_url_from_server_url(source.url) if source.url else ""
    return (
        connection.resource == auth.resource
        and connection.issuer == auth.issuer
        and connection.client_id == auth.client_id
        and bool(url)
        and check_resource_allowed(url, connection.resource)
    )


def _credential(connection: Connection, person: Any) -> Credential:
    try:
        token = crypto.decrypt(connection.access_encrypted)
    except crypto.Unreadable as exc:
        raise NeedsAuthorization(f"authorization: {exc}; connect again") from exc
    now = timezone.now()
    if connection.last_used is None or connection.last_used < now - LAST_USED_EVERY:
        Connection.objects.filter(pk=connection.pk).update(last_used=now)
    return Credential(
        headers={"Authorization": f"Bearer {token}"},
        person=person.get_username(),
        connection=str(connection.public_id),
        connection_id=connection.pk,
        fingerprint=hashlib.sha256(connection.access_encrypted.encode()).hexdigest(),
    )


def _due(connection: Connection) -> bool:
    if connection.expires is None:
        return False
    margin = timedelta(seconds=settings.QUIVER_VAULT_REFRESH_MARGIN_SECONDS)
    return connection.expires <= timezone.now() + margin


def _expired(connection: Connection) -> bool:
    return connection.expires is not None and connection.expires <= timezone.now()


def fresh(
    connection: Connection, auth: SourceAuthorization, *, refused: str = ""
) -> Connection:
    """The connection with a token that is not about to expire: refreshed under
    the row's lock when it is (``refused``: the upstream refused the token it
    holds, so refresh it whatever its expiry). ``NeedsAuthorization`` when the
    server refuses the refresh (the connection removed), or it has expired and
    cannot be refreshed."""
    if not refused and not _due(connection):
        return connection
    gone = ""
    with transaction.atomic():
        row = Connection.objects.select_for_update().filter(pk=connection.pk).first()
        if row is None:
            gone = "its connection was removed meanwhile"
        elif refused and row.access_encrypted != refused:
            return row  # another call refreshed it while this one waited
        elif not refused and not _due(row):
            return row  # refreshed while this call waited for the lock
        else:
            gone = _refresh(row, auth)
            if not gone:
                return row
    raise NeedsAuthorization(
        f"authorization: the account's token at source {connection.source.name!r} "
        f"is no longer valid ({gone}); connect it again"
    )


def _refresh(row: Connection, auth: SourceAuthorization) -> str:
    """Refresh ``row`` in place (locked); '' when it holds a good token now,
    else why it cannot (the connection is then removed, audited)."""
    refresh_token = crypto.decrypt(row.refresh_encrypted)
    if not refresh_token:
        return _remove(row, "it expired and the server gave no refresh token")
    try:
        tokens = oauth.refresh(oauth.Client.of(auth), refresh_token)
    except oauth.TokenRefused as exc:
        return _remove(row, f"the server refused its refresh ({exc.error})")
    except oauth.ServerDown as exc:
        if _expired(row):
            raise AuthorizationServerDown(
                f"authorization server {auth.issuer}: did not answer a refresh ({exc})"
            ) from exc
        return ""  # the current token still works; the next call tries again
    row.access_encrypted = crypto.encrypt(tokens.access)
    row.refresh_encrypted = crypto.encrypt(tokens.refresh)
    row.expires, row.refreshed = tokens.expires, timezone.now()
    row.scope = tokens.scope or row.scope
    fields = ["access_encrypted", "refresh_encrypted", "expires", "refreshed"]
    row.save(update_fields=[*fields, "scope"])
    return ""


def _remove(row: Connection, why: str) -> str:
    _remove_by_id(row.pk, why)
    return why


def after_refusal(credential: Credential, source: Source) -> Credential:
    """The upstream answered 401 to ``credential``: its token refreshed once
    (``NeedsAuthorization`` when that fails; the connection is then removed)."""
    connection = (
        Connection.objects.filter(pk=credential.connection_id)
        .select_related("person")
        .first()
    )
    auth = SourceAuthorization.objects.filter(source=source).first()
    if connection is None or auth is None:
        raise NeedsAuthorization(
            f"authorization: source {source.name!r} refused the account's token; "
            "connect it again"
        )
    renewed = fresh(connection, auth, refused=connection.access_encrypted)
    return _credential(renewed, connection.person)


def give_up(credential: Credential, source: Source) -> NeedsAuthorization:
    """The upstream refused even a refreshed token: the connection removed
    (audited), and what the call answers."""
    why = "the server refused its token again after a refresh"
    _remove_by_id(credential.connection_id, why)
    return NeedsAuthorization(
        f"authorization: source {source.name!r} refused the account's token "
        "(401); connect it again"
    )


def _remove_by_id(connection_id: int, why: str) -> None:
    found = Connection.objects.filter(pk=connection_id)
    remove_connections(found, reason=why, actor=None)


def sync_headers(source: Source) -> dict[str, str] | None:
    """The headers of the first connected account that still has a good token
    (connected first, first used), or None when nobody has."""
    auth = SourceAuthorization.objects.filter(source=source).first()
    if auth is None:
        return None
    candidates = Connection.objects.filter(
        source=source, person__is_active=True
    ).select_related("person", "source")
    for connection in candidates.order_by("created", "id"):
        if not bound(connection, auth, source):
            continue
        try:
            return _credential(fresh(connection, auth), connection.person).headers
        except (NeedsAuthorization, AuthorizationServerDown):
            continue
    return None
