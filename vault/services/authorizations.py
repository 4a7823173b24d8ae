"""Writes to a source's authorization: what discovery found, Quiver's
registration at the authorization server, and the client id and secret an
admin gives where the server registers nobody by itself.

Each change is one ``upstream_auth`` event in its transaction. A change of the
resource, the issuer or Quiver's client makes every person's connection of the
source unusable, so they are removed with it (each its own event): a token is
never sent for another resource or through another client than it was issued
for."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from audit.actors import Actor
from sources.models import Source
from sources.services import require_manager
from vault import crypto, events
from vault.discovery import discover
from vault.models import Registration, SourceAuthorization
from vault.registration import RegistrationFailed, register
from vault.services.removal import remove_connections

MAX_CLIENT_ID = 2000
MAX_SECRET = 2000


def callback_url(base: str, source: Source) -> str:
    path = reverse("vault:callback", kwargs={"source_id": source.pk})
    return base.rstrip("/") + path


def document_url(base: str, source: Source) -> str:
    path = reverse("vault:client-document", kwargs={"source_id": source.pk})
    return base.rstrip("/") + path


def follow_challenge(source: Source, challenge: str, *, actor: Actor = None) -> str:
    """``source`` answered 401 with ``challenge``: its authorization discovered
    (``DiscoveryFailed``, a ``ValueError``, when it cannot be followed) and,
    when Quiver's public URL is known, Quiver registered. What the source now
    waits for."""
    found = discover(source.url, challenge)
    with transaction.atomic():
        auth = SourceAuthorization.objects.select_for_update().filter(source=source)
        row = auth.first() or SourceAuthorization(source=source)
        moved = row.pk is None or (row.resource, row.issuer) != (
            found.resource,
            found.issuer,
        )
        if moved and row.pk is not None:
            _forget_client(row)
            reason = "the source's resource or authorization server changed"
            remove_connections(source.connections.all(), reason=reason, actor=actor)
        row.resource, row.issuer = found.resource, found.issuer
        row.resource_metadata_url, row.metadata = (
            found.resource_metadata_url,
            found.metadata,
        )
        row.scope, row.discovered = found.scope, timezone.now()
        row.save()
        if moved:
            events.record(
                events.DISCOVERED,
                source,
                actor=actor,
                issuer=row.issuer,
                resource=row.resource,
                resource_metadata=row.resource_metadata_url,
            )
    public = str(settings.QUIVER_PUBLIC_URL or "")
    problem = ""
    if public and not row.is_registered:
        try:
            row = ensure_registered(row, public, actor=actor)
        except RegistrationFailed as exc:
            problem = f" ({exc})"
    return waiting_for(row) + problem


def waiting_for(auth: SourceAuthorization) -> str:
    if auth.is_registered or auth.metadata.get("registration_endpoint"):
        return (
            f"waiting for a person to connect their account at {auth.issuer} "
            "(My connections)"
        )
    return (
        f"waiting for an admin to give Quiver's client id at {auth.issuer}: it "
        "registers no client by itself"
    )


def ensure_registered(
    auth: SourceAuthorization, base: str, *, actor: Actor
) -> SourceAuthorization:
    """Quiver registered at the source's authorization server for the callback
    under ``base`` (a registration for another callback is made again);
    ``RegistrationFailed`` when the server refuses."""
    source = auth.source
    redirect = callback_url(base, source)
    if auth.registration == Registration.ADMIN:
        return auth
    if auth.is_registered and auth.redirect_uri == redirect:
        return auth
    client = register(auth.metadata, redirect, document_url(base, source), auth.scope)
    with transaction.atomic():
        row = SourceAuthorization.objects.select_for_update().get(pk=auth.pk)
        if row.registration == Registration.ADMIN or (
            row.is_registered and row.redirect_uri == redirect
        ):
            return row
        if row.is_registered:
            reason = "Quiver was registered again (its callback changed)"
            remove_connections(source.connections.all(), reason=reason, actor=actor)
        row.registration, row.client_id = client.registration, client.client_id
        row.client_secret_encrypted = crypto.encrypt(
            client.client_secret, crypto.CLIENT_SECRETS
        )
        row.token_endpoint_auth_method = client.method
        row.redirect_uri = redirect if client.client_id else ""
        row.registered = timezone.now() if client.client_id else None
        row.save()
        if client.client_id:
            _registered(source, row, actor)
    return row


def set_client(
    auth: SourceAuthorization,
    *,
    client_id: Any,
    client_secret: Any,
    base: str,
    actor: Actor,
    request_id: uuid.UUID | None = None,
) -> SourceAuthorization:
    """Quiver's client at the source's authorization server, as an admin
    registered it by hand (for the callback shown on the source's page)."""
    source = auth.source
    require_manager(actor, source.catalog)
    client_id, secret = _clean_client(client_id, client_secret)
    offered = auth.metadata.get("token_endpoint_auth_methods_supported") or [
        "client_secret_basic"
    ]
    method = "none"
    if secret:
        method = next(
            (m for m in offered if m in ("client_secret_basic", "client_secret_post")),
            "client_secret_basic",
        )
    with transaction.atomic():
        row = SourceAuthorization.objects.select_for_update().get(pk=auth.pk)
        same = row.registration == Registration.ADMIN and row.client_id == client_id
        if not same:
            reason = "an admin gave Quiver another client id"
            remove_connections(source.connections.all(), reason=reason, actor=actor)
        if secret or not same:  # an empty secret keeps the stored one
            row.client_secret_encrypted = crypto.encrypt(secret, crypto.CLIENT_SECRETS)
        elif row.client_secret_encrypted:
            method = row.token_endpoint_auth_method
        row.registration, row.client_id = Registration.ADMIN, client_id
        row.token_endpoint_auth_method = method
        row.redirect_uri, row.registered = callback_url(base, source), timezone.now()
        row.save()
        _registered(source, row, actor, request_id)
    return row


def _registered(
    source: Source,
    row: SourceAuthorization,
    actor: Actor,
    request_id: uuid.UUID | None = None,
) -> None:
    """The event of Quiver's client at ``source``'s authorization server, as
    ``row`` now holds it."""
    events.record(
        events.REGISTERED,
        source,
        actor=actor,
        issuer=row.issuer,
        registration=row.registration,
        client_id=row.client_id,
        request_id=request_id,
    )


def _clean_client(client_id: Any, client_secret: Any) -> tuple[str, str]:
    if not isinstance(client_id, str) or not client_id.strip():
        raise ValidationError({"client_id": ["client_id: required"]})
    client_id = client_id.strip()
    if len(client_id) > MAX_CLIENT_ID or any(c in client_id for c in "\r\n\0"):
        raise ValidationError(
            {"client_id": [f"client_id: at most {MAX_CLIENT_ID} characters, one line"]}
        )
    secret = client_secret if isinstance(client_secret, str) else ""
    if len(secret) > MAX_SECRET or any(c in secret for c in "\r\n\0"):
        raise ValidationError(
            {"client_secret": [f"client_secret: at most {MAX_SECRET} characters"]}
        )
    return client_id, secret


def _forget_client(row: SourceAuthorization) -> None:
    """Another resource or server: the old registration means nothing there."""
    row.registration, row.client_id = Registration.NONE, ""
    row.client_secret_encrypted, row.token_endpoint_auth_method = "", "none"
    row.redirect_uri, row.registered = "", None
