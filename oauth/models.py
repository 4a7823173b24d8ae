"""OAuth clients, the connections people approve, and the codes and refresh
tokens issued for them. Access tokens are signed JWTs (oauth.tokens): only the
revoked ones are stored, until they would have expired anyway.

A connection acts through an API client of kind ``oauth`` (its principal): the
scope, catalogs, roles and unsafe permission chosen at consent, bound to the
person (``ApiClient.person``), so every request holds the consent intersected
with the person's access at that moment, and audit rows, approvals and rate
limits treat it as they treat a key. Secrets (codes, refresh tokens) are stored
as SHA-256 hashes only."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from oauth.choices import ENDPOINT_SCOPES, ClientKind


class OAuthClient(models.Model):
    """A client application: registered (RFC 7591), known by the URL of its
    client ID metadata document (fetched, cached), or seen in the tokens of the
    company's authorization server. Clients are public: PKCE, no secret."""

    client_id = models.CharField(max_length=2000, unique=True)
    kind = models.CharField(max_length=8, choices=ClientKind.choices)
    name = models.CharField(max_length=200)
    issuer = models.CharField(max_length=500, blank=True, default="")
    redirect_uris = models.JSONField(default=list, blank=True)
    scope = models.CharField(max_length=2000, blank=True, default="")
    # The metadata as registered or fetched (RFC 7591 names), shown to people.
    metadata = models.JSONField(default=dict, blank=True)
    # A metadata document's copy: when it was fetched, and until when it is used.
    fetched = models.DateTimeField(null=True, blank=True)
    fresh_until = models.DateTimeField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.name} ({self.client_id[:60]})"

    # authlib's ClientMixin: a public client of the code flow, redirects exact.
    def get_client_id(self) -> str:
        return self.client_id

    def get_default_redirect_uri(self) -> str | None:
        return self.redirect_uris[0] if len(self.redirect_uris) == 1 else None

    def get_allowed_scope(self, scope: str | None) -> str:
        return scope or " ".join(ENDPOINT_SCOPES)

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return redirect_uri in self.redirect_uris

    def check_client_secret(self, client_secret: str) -> bool:
        return False

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method == "none"

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in ("authorization_code", "refresh_token")


class Connection(models.Model):
    """A person's approval of a client, acting through ``principal``; revoking
    it stops the principal and every token issued for it."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    client = models.ForeignKey(
        OAuthClient, on_delete=models.PROTECT, related_name="connections"
    )
    person = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        on_delete=models.SET_NULL,
        related_name="oauth_connections",
    )
    person_name = models.CharField(max_length=150)
    principal = models.OneToOneField(
        "identity.ApiClient", on_delete=models.CASCADE, related_name="oauth_connection"
    )
    # The scope strings granted (endpoint scopes: mcp, api).
    scope = models.CharField(max_length=200, default="")
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)
    revoked = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["client", "person"],
                condition=models.Q(revoked__isnull=True),
                name="oauth_one_live_connection",
            )
        ]

    def __str__(self) -> str:
        return f"{self.person_name} → {self.client.name}"


class TokenFamily(models.Model):
    """One authorization code's tokens: its access tokens (``sid``) and the
    chain of refresh tokens that rotate from it. Revoking it (a reused refresh
    token, a replayed code, RFC 7009) stops them all."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    connection = models.ForeignKey(
        Connection, on_delete=models.CASCADE, related_name="families"
    )
    scope = models.CharField(max_length=200)
    resource = models.CharField(max_length=2000)
    created = models.DateTimeField(auto_now_add=True)
    revoked = models.DateTimeField(null=True, blank=True)
    revoked_reason = models.CharField(max_length=200, blank=True, default="")

    def __str__(self) -> str:
        return str(self.id)


class AuthorizationCode(models.Model):
    """A code handed to the client's redirect URI, good once for a short while."""

    code_hash = models.CharField(max_length=64, unique=True)
    connection = models.ForeignKey(
        Connection, on_delete=models.CASCADE, related_name="codes"
    )
    redirect_uri = models.TextField()
    scope = models.CharField(max_length=200)
    resource = models.CharField(max_length=2000)
    code_challenge = models.CharField(max_length=128)
    code_challenge_method = models.CharField(max_length=8)
    expires = models.DateTimeField()
    used = models.DateTimeField(null=True, blank=True)
    family = models.OneToOneField(
        TokenFamily, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    def __str__(self) -> str:
        return f"code {self.code_hash[:8]}"

    # authlib's AuthorizationCodeMixin.
    def get_redirect_uri(self) -> str:
        return self.redirect_uri

    def get_scope(self) -> str:
        return self.scope


class RefreshToken(models.Model):
    """One refresh token of a family; using it once rotates it, using it again
    revokes the family."""

    token_hash = models.CharField(max_length=64, unique=True)
    family = models.ForeignKey(
        TokenFamily, on_delete=models.CASCADE, related_name="refresh_tokens"
    )
    expires = models.DateTimeField()
    used = models.DateTimeField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"refresh {self.token_hash[:8]}"

    # What authlib's refresh grant and revocation endpoint ask of a token.
    def check_client(self, client: OAuthClient) -> bool:
        return bool(self.family.connection.client_id == client.pk)

    def get_scope(self) -> str:
        return self.family.scope


class RevokedAccessToken(models.Model):
    """An access token revoked before its expiry (RFC 7009), by its ``jti``."""

    jti = models.CharField(max_length=64, unique=True)
    expires = models.DateTimeField(db_index=True)
    created = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.jti
