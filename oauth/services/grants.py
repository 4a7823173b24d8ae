"""Codes, token families and refresh tokens: issued, used once, revoked.

A code or a refresh token is claimed by one conditional UPDATE (the row changes
only while unused), committed before anything is issued for it, so two requests
racing with the same secret get one answer between them. A code used again
revokes the family issued from it, a refresh token used again revokes its
family (RFC 9700: the legitimate client and the thief cannot be told apart);
each revocation is an audit row. Only SHA-256 hashes of the secrets are kept."""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from audit.actors import Actor
from audit.choices import EventType
from audit.services import record_event
from oauth.models import (
    AuthorizationCode,
    Connection,
    RefreshToken,
    RevokedAccessToken,
    TokenFamily,
)
from oauth.services.connections import client_record

CODE_S = 120  # OAuth 2.1 recommends at most 10 minutes; a browser needs seconds


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def save_code(
    code: str,
    connection: Connection,
    *,
    redirect_uri: str,
    scope: str,
    resource: str,
    challenge: str,
    method: str,
) -> AuthorizationCode:
    return AuthorizationCode.objects.create(
        code_hash=digest(code),
        connection=connection,
        redirect_uri=redirect_uri,
        scope=scope,
        resource=resource,
        code_challenge=challenge,
        code_challenge_method=method,
        expires=timezone.now() + timedelta(seconds=CODE_S),
    )


def find_code(code: str) -> AuthorizationCode | None:
    return (
        AuthorizationCode.objects.select_related(
            "connection__client", "connection__principal__user", "family"
        )
        .filter(code_hash=digest(code))
        .first()
    )


def claim_code(found: AuthorizationCode) -> bool:
    """Mark the code used; False when it was used before (or meanwhile)."""
    with transaction.atomic():
        claimed = AuthorizationCode.objects.filter(
            pk=found.pk, used__isnull=True
        ).update(used=timezone.now())
    return claimed == 1


def start_family(found: AuthorizationCode) -> TokenFamily:
    """The family of tokens one code gives (in the token response's
    transaction), recorded as tokens issued for the connection."""
    connection = found.connection
    family = TokenFamily.objects.create(
        connection=connection, scope=found.scope, resource=found.resource
    )
    found.family = family
    found.save(update_fields=["family"])
    record_event(
        EventType.OAUTH_TOKEN,
        actor=connection.principal.user,
        request_id=None,
        summary=f"tokens issued to {connection.client.name} for "
        f"{connection.person_name}",
        input={"client": client_record(connection.client), "grant": "code"},
        output={
            "family": str(family.id),
            "scope": family.scope,
            "resource": family.resource,
            "connection": str(connection.public_id),
        },
    )
    return family


def save_refresh_token(token: str, family: TokenFamily) -> RefreshToken:
    lifetime = timedelta(seconds=settings.QUIVER_OAUTH.refresh_token_s)
    return RefreshToken.objects.create(
        token_hash=digest(token), family=family, expires=timezone.now() + lifetime
    )


def find_refresh_token(token: str) -> RefreshToken | None:
    return (
        RefreshToken.objects.select_related(
            "family__connection__client", "family__connection__principal__user"
        )
        .filter(token_hash=digest(token))
        .first()
    )


def claim_refresh_token(found: RefreshToken) -> bool:
    """Mark the refresh token used; False when it was used before."""
    with transaction.atomic():
        claimed = RefreshToken.objects.filter(pk=found.pk, used__isnull=True).update(
            used=timezone.now()
        )
    return claimed == 1


def revoke_family(
    family: TokenFamily,
    *,
    reason: str,
    actor: Actor,
    request_id: uuid.UUID | None = None,
) -> bool:
    """Stop every token of the family; False when it was stopped already."""
    with transaction.atomic():
        stopped = TokenFamily.objects.filter(pk=family.pk, revoked__isnull=True).update(
            revoked=timezone.now(), revoked_reason=reason[:200]
        )
        if not stopped:
            return False
        connection = family.connection
        record_event(
            EventType.OAUTH_REVOKED,
            actor=actor,
            request_id=request_id,
            summary=f"tokens of {connection.client.name} for "
            f"{connection.person_name} revoked: {reason}",
            input={"client": client_record(connection.client), "reason": reason},
            output={"family": str(family.id), "connection": str(connection.public_id)},
        )
    return True


def revoke_access_token(
    jti: str,
    expires: datetime,
    *,
    connection: Connection,
    request_id: uuid.UUID | None = None,
) -> None:
    """Stop one access token before its expiry (RFC 7009); idempotent."""
    with transaction.atomic():
        _row, created = RevokedAccessToken.objects.get_or_create(
            jti=jti, defaults={"expires": expires}
        )
        if not created:
            return
        record_event(
            EventType.OAUTH_REVOKED,
            actor=connection.principal.user,
            request_id=request_id,
            summary=f"an access token of {connection.client.name} for "
            f"{connection.person_name} revoked",
            input={"client": client_record(connection.client), "reason": "revoked"},
            output={"token_id": jti, "connection": str(connection.public_id)},
        )


def forget_expired() -> int:
    """Drop revoked access tokens that have expired anyway, and used or expired
    codes (their audit rows stay): nothing needs them any more."""
    now = timezone.now()
    dropped, _ = RevokedAccessToken.objects.filter(expires__lt=now).delete()
    codes, _ = AuthorizationCode.objects.filter(
        expires__lt=now - timedelta(days=1)
    ).delete()
    return dropped + codes
