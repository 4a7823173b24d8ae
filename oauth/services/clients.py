"""OAuth clients: registered (RFC 7591), read from their client ID metadata
documents, or seen in the company authorization server's tokens. A client is
public (no secret: PKCE instead); its redirect URIs are kept exactly as given
and matched exactly."""

from __future__ import annotations

import secrets
import uuid
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from audit.choices import EventType
from audit.services import record_event
from oauth.choices import ClientKind
from oauth.models import OAuthClient

NAME_CHARS = 200
CLIENT_ID_BYTES = 24


def new_client_id() -> str:
    return secrets.token_urlsafe(CLIENT_ID_BYTES)


def register_client(
    client_id: str,
    metadata: dict[str, Any],
    *,
    address: str,
    request_id: uuid.UUID | None = None,
) -> OAuthClient:
    """A new client from checked RFC 7591 metadata, recorded with the address
    that registered it (anyone may register: nothing is granted until a person
    approves the client)."""
    with transaction.atomic():
        client = OAuthClient.objects.create(
            client_id=client_id,
            kind=ClientKind.DYNAMIC,
            name=_name(metadata, "an unnamed client"),
            redirect_uris=list(metadata.get("redirect_uris") or []),
            scope=str(metadata.get("scope") or ""),
            metadata=metadata,
        )
        _record(client, "registered", address=address, request_id=request_id)
    return client


def save_document_client(
    client_id: str,
    metadata: dict[str, Any],
    *,
    fallback_name: str,
    fresh_until: datetime,
) -> OAuthClient:
    """The client a metadata document describes, stored or brought up to date
    (a cache of the document: the first fetch is recorded)."""
    with transaction.atomic():
        client, created = OAuthClient.objects.select_for_update().get_or_create(
            client_id=client_id,
            defaults={"kind": ClientKind.DOCUMENT, "name": fallback_name},
        )
        client.name = _name(metadata, fallback_name)
        client.redirect_uris = list(metadata.get("redirect_uris") or [])
        client.scope = str(metadata.get("scope") or "")
        client.metadata = metadata
        client.fetched = timezone.now()
        client.fresh_until = fresh_until
        client.save(
            update_fields=[
                *("name", "redirect_uris", "scope", "metadata"),
                *("fetched", "fresh_until"),
            ]
        )
        if created:
            _record(client, "read from its metadata document", address="")
    return client


def external_client(issuer: str, client_id: str) -> OAuthClient:
    """The client a company token names (made on first sight, recorded)."""
    found = OAuthClient.objects.filter(client_id=client_id).first()
    if found is not None:
        return found
    with transaction.atomic():
        client, created = OAuthClient.objects.get_or_create(
            client_id=client_id,
            defaults={
                "kind": ClientKind.EXTERNAL,
                "name": client_id[:NAME_CHARS],
                "issuer": issuer,
            },
        )
        if created:
            _record(client, f"seen in a token of {issuer}", address="")
    return client


def _name(metadata: dict[str, Any], fallback: str) -> str:
    name = metadata.get("client_name")
    text = name.strip() if isinstance(name, str) else ""
    return (text or fallback)[:NAME_CHARS]


def _record(
    client: OAuthClient,
    how: str,
    *,
    address: str,
    request_id: uuid.UUID | None = None,
) -> None:
    record_event(
        EventType.OAUTH_CLIENT,
        actor=None,
        request_id=request_id,
        summary=f"OAuth client {client.name!r} {how}",
        input={"address": address, "kind": client.kind},
        output={
            "id": client.client_id,
            "name": client.name,
            "redirect_uris": client.redirect_uris,
            "scope": client.scope,
        },
    )
