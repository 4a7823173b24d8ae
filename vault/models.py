"""A token vault for sources that ask each person for OAuth.

``SourceAuthorization`` is what such a source told Quiver (its protected
resource, RFC 9728, and its authorization server, RFC 8414) and how Quiver is
registered there as a client. ``Connection`` is one person's authorization of
one source: their access and refresh tokens, encrypted (``vault.crypto``), bound
to the person, the source and the resource they were issued for, and never used
for anyone else or anything else."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from sources.models import Source


class Registration(models.TextChoices):
    """How Quiver is known to a source's authorization server."""

    METADATA_DOCUMENT = "metadata_document", "Client ID metadata document"
    DYNAMIC = "dynamic", "Dynamic client registration (RFC 7591)"
    ADMIN = "admin", "Client id and secret given by an admin"
    NONE = "none", "Not registered yet"


class SourceAuthorization(models.Model):
    """A source's resource and authorization server, and Quiver's registration
    there. Rediscovered when the source asks again; a token is only ever sent
    for ``resource``, through this registration."""

    source = models.OneToOneField(
        Source, on_delete=models.CASCADE, related_name="authorization"
    )
    # The resource indicator (RFC 8707) every authorization and token names.
    resource = models.CharField(max_length=2000)
    resource_metadata_url = models.CharField(max_length=2000)
    issuer = models.CharField(max_length=2000)
    # The authorization server's metadata as checked (its endpoints and methods).
    metadata = models.JSONField(default=dict)
    scope = models.CharField(max_length=1000, blank=True, default="")
    registration = models.CharField(
        max_length=20, choices=Registration.choices, default=Registration.NONE
    )
    client_id = models.CharField(max_length=2000, blank=True, default="")
    # Encrypted (vault.crypto), never shown back.
    client_secret_encrypted = models.TextField(blank=True, default="")
    token_endpoint_auth_method = models.CharField(max_length=40, default="none")
    # The callback the client was registered with: every flow uses exactly it.
    redirect_uri = models.CharField(max_length=2000, blank=True, default="")
    discovered = models.DateTimeField()
    registered = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.source} via {self.issuer}"

    @property
    def is_registered(self) -> bool:
        return self.registration != Registration.NONE and bool(self.client_id)


class Connection(models.Model):
    """One person's authorization of one source, with its tokens (encrypted).

    Bound to its person, source, resource and issuer: the call path sends its
    access token only on a call made for ``person`` to ``source`` while the
    source's authorization still names this resource and issuer."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    person = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="upstream_connections",
    )
    source = models.ForeignKey(
        Source, on_delete=models.CASCADE, related_name="connections"
    )
    resource = models.CharField(max_length=2000)
    issuer = models.CharField(max_length=2000)
    client_id = models.CharField(max_length=2000)
    scope = models.CharField(max_length=1000, blank=True, default="")
    access_encrypted = models.TextField()
    refresh_encrypted = models.TextField(blank=True, default="")
    # When the access token stops (None: the server did not say).
    expires = models.DateTimeField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    refreshed = models.DateTimeField(null=True, blank=True)
    last_used = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["person", "source"], name="vault_one_connection_per_source"
            )
        ]

    def __str__(self) -> str:
        return f"{self.person_id} -> {self.source_id}"
