"""A person connects their own account at a source that asks for OAuth, and
disconnects it.

``start_connection`` keeps the flow (state, PKCE verifier, source, person, issuer,
resource, callback) server-side in the person's session; ``finish_connection``
refuses, each refusal an ``upstream_auth`` event, a state this session did not start
or another person's or source's, a wrong or missing ``iss``, a source whose
authorization changed meanwhile, and the server's error. The code goes only to the
token endpoint the flow was sent to, and the tokens are bound to the person, the
source, the resource and the issuer.
The rules: docs/explanation/security.md, Per-person authorization and the token vault.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from authlib.common.security import generate_token
from django.contrib.sessions.backends.base import SessionBase
from django.db import transaction
from mcp.client.auth import OAuthFlowError
from mcp.client.auth.utils import validate_authorization_response_iss
from mcp.shared.auth import OAuthMetadata

from audit.actors import Actor
from sources.models import Source
from vault import crypto, events, oauth
from vault.models import Connection, SourceAuthorization
from vault.services.authorizations import ensure_registered
from vault.services.removal import revocation_of

PENDING = "quiver_vault_flows"
MAX_PENDING = 5


class ConnectRefused(Exception):
    """The connection cannot be made; ``reason`` says why as "field: rule"."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


def start_connection(
    session: SessionBase, person: Any, source: Source, *, base: str
) -> str:
    """The URL of the source's authorization server where ``person`` authorizes
    Quiver; the flow waits in ``session``."""
    auth = SourceAuthorization.objects.filter(source=source).first()
    if auth is None:
        raise ConnectRefused("source: does not ask each person for authorization")
    try:
        auth = ensure_registered(auth, base, actor=person)
    except ValueError as exc:
        raise ConnectRefused(str(exc)) from exc
    if not auth.is_registered:
        raise ConnectRefused(
            f"source: Quiver has no client id at {auth.issuer} yet; an admin "
            "gives it on the source's page"
        )
    state, verifier = generate_token(32), oauth.new_verifier()
    url = oauth.authorization_url(oauth.Client.of(auth), state, verifier)
    flows = _live(session.get(PENDING) or {})
    flows[state] = {
        "source": source.pk,
        "person": person.pk,
        "verifier": verifier,
        "issuer": auth.issuer,
        "resource": auth.resource,
        "client_id": auth.client_id,
        "redirect_uri": auth.redirect_uri,
        "started": time.time(),
    }
    session[PENDING] = dict(list(flows.items())[-MAX_PENDING:])
    return url


def _live(flows: dict[str, Any]) -> dict[str, Any]:
    from django.conf import settings

    oldest = time.time() - settings.QUIVER_VAULT_FLOW_SECONDS
    return {k: v for k, v in flows.items() if float(v.get("started", 0)) >= oldest}


def finish_connection(
    session: SessionBase,
    person: Any,
    source: Source,
    answer: dict[str, str],
    *,
    request_id: uuid.UUID | None = None,
) -> Connection:
    """The callback's ``answer`` (its query) made into ``person``'s connection
    of ``source``; ``ConnectRefused``, recorded, otherwise."""
    try:
        flow = _flow(session, person, source, answer)
        auth = _same_authorization(source, flow)
        code = answer.get("code") or ""
        if not code:
            raise ConnectRefused("code: the callback brought none")
        client = oauth.Client.of(auth)
        tokens = oauth.exchange_code(client, code, flow["verifier"])
    except ConnectRefused as refused:
        _record_refusal(source, person, refused.reason, request_id)
        raise
    except oauth.TokenRefused as exc:
        reason = f"code: the authorization server refused it ({exc.error})"
        _record_refusal(source, person, reason, request_id)
        raise ConnectRefused(reason) from exc
    except oauth.ServerDown as exc:
        reason = f"token: the authorization server did not answer ({exc})"
        _record_refusal(source, person, reason, request_id)
        raise ConnectRefused(reason) from exc
    return _store(person, source, auth, tokens, request_id)


def _flow(
    session: SessionBase, person: Any, source: Source, answer: dict[str, str]
) -> dict[str, Any]:
    """The flow the answer's ``state`` names, spent (taken from the session)
    whatever follows; its checks against the answer."""
    state = answer.get("state") or ""
    flows = dict(session.get(PENDING) or {})
    flow = flows.pop(state, None) if state else None
    session[PENDING] = flows
    if flow is None or flow not in _live({state: flow}).values():
        raise ConnectRefused(
            "state: no connection was started with this state in this session "
            "(or it was used already, or it expired)"
        )
    if flow["person"] != person.pk:
        raise ConnectRefused("state: the connection was started by another person")
    if flow["source"] != source.pk:
        raise ConnectRefused(
            "state: the connection was started for another source (its answer "
            "came to another source's callback)"
        )
    error = answer.get("error")
    if error:
        raise ConnectRefused(f"authorization: the server answered {_code(error)}")
    _check_issuer(answer.get("iss"), flow)
    return flow


def _check_issuer(iss: str | None, flow: dict[str, Any]) -> None:
    """RFC 9207: the answer's issuer is the one the flow was sent to."""
    auth = SourceAuthorization.objects.filter(source_id=flow["source"]).first()
    metadata = OAuthMetadata.model_validate(auth.metadata) if auth else None
    if iss is not None and iss != flow["issuer"]:
        raise ConnectRefused(
            "iss: the answer names another authorization server than the one "
            "the connection was sent to"
        )
    try:
        validate_authorization_response_iss(iss, metadata)
    except OAuthFlowError as exc:
        raise ConnectRefused(
            "iss: the authorization server always names itself, and this answer "
            "does not"
        ) from exc


def _same_authorization(source: Source, flow: dict[str, Any]) -> SourceAuthorization:
    auth = SourceAuthorization.objects.filter(source=source).first()
    now = (
        (auth.issuer, auth.resource, auth.client_id, auth.redirect_uri)
        if auth
        else None
    )
    then = (flow["issuer"], flow["resource"], flow["client_id"], flow["redirect_uri"])
    if auth is None or now != then:
        raise ConnectRefused(
            "source: its authorization changed since the connection started; "
            "connect again"
        )
    return auth


def _code(error: str) -> str:
    return error if error in oauth.OAUTH_ERRORS else "an error"


def _record_refusal(
    source: Source, person: Any, reason: str, request_id: uuid.UUID | None
) -> None:
    with transaction.atomic():
        events.record(
            events.REFUSED,
            source,
            actor=person,
            person=person,
            reason=reason,
            request_id=request_id,
        )


def _store(
    person: Any,
    source: Source,
    auth: SourceAuthorization,
    tokens: oauth.Tokens,
    request_id: uuid.UUID | None,
) -> Connection:
    """The tokens in the vault (a connection made again replaces the old one,
    whose tokens are revoked); the source synced if it never was."""
    from sources.services import start_sync

    with transaction.atomic():
        old = Connection.objects.select_for_update().filter(
            person=person, source=source
        )
        for previous in old:
            transaction.on_commit(revocation_of(previous), robust=True)
            previous.delete()
        connection = Connection.objects.create(
            person=person,
            source=source,
            resource=auth.resource,
            issuer=auth.issuer,
            client_id=auth.client_id,
            scope=tokens.scope or auth.scope,
            access_encrypted=crypto.encrypt(tokens.access),
            refresh_encrypted=crypto.encrypt(tokens.refresh),
            expires=tokens.expires,
        )
        events.record(
            events.CONNECTED,
            source,
            actor=person,
            person=person,
            connection=connection,
            issuer=auth.issuer,
            request_id=request_id,
            resource=auth.resource,
            scope=connection.scope,
        )
        if source.status != "ok":
            start_sync(source, actor=None)
    return connection


def disconnect(
    connection: Connection, *, actor: Actor, request_id: uuid.UUID | None = None
) -> bool:
    """Remove a person's connection; its tokens are revoked at the server first
    where it can (whether it did is in the event)."""
    revoked = revocation_of(connection)()
    with transaction.atomic():
        row = Connection.objects.select_for_update().filter(pk=connection.pk).first()
        if row is None:
            return False
        events.record(
            events.DISCONNECTED,
            connection.source,
            actor=actor,
            person=connection.person,
            connection=row,
            issuer=row.issuer,
            request_id=request_id,
            revoked=revoked,
        )
        row.delete()
    return True
