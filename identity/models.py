"""Identity models: the API clients agents and scripts authenticate with, and the
catalogs each person is limited to. People and groups are Django's own."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from identity.choices import ApiScope, ClientKind


class ApiClient(models.Model):
    """A bearer key for an agent or script; only a hash of the key is stored.

    Each client acts through its own service user so permissions, audit rows and
    ``created_by`` fields work the same for people and programs."""

    name = models.CharField(max_length=100, unique=True)
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_client"
    )
    scope = models.CharField(max_length=12, choices=ApiScope.choices)
    roles = models.JSONField(default=list, blank=True)
    # The catalogs it may see; every catalog only when ``all_catalogs`` is set (an
    # explicit choice: an empty list with it unset means none, failing closed).
    catalogs = models.JSONField(default=list, blank=True)
    all_catalogs = models.BooleanField(default=False)
    # May this client be offered unsafe tools at all? A request can only narrow it.
    allow_unsafe = models.BooleanField(default=False)
    # Selections (batch items count one each) per minute; None = the site default.
    rate_limit_per_minute = models.PositiveIntegerField(null=True, blank=True)
    # The person who made the key: when they are deactivated, the key stops working.
    # ``owner_name`` is kept when the person is deleted, so the key stops then too.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="owned_api_clients",
    )
    owner_name = models.CharField(max_length=150, blank=True, default="")
    # The key that made this one: it stops when any ancestor stops (identity.auth).
    # ``parent_name`` is kept when the parent row is deleted, so the key stops then.
    parent = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="children",
    )
    parent_name = models.CharField(max_length=100, blank=True, default="")
    # The person the client acts for (a key bound to a person, or an OAuth
    # connection's person): it never holds more than they hold at each request,
    # and the audit names them. ``person_name`` is kept when the person is
    # deleted, so the client stops then (it would otherwise act for nobody).
    person = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="agent_clients",
    )
    person_name = models.CharField(max_length=150, blank=True, default="")
    kind = models.CharField(
        max_length=5, choices=ClientKind.choices, default=ClientKind.KEY
    )
    key_prefix = models.CharField(max_length=12, unique=True)
    key_hash = models.CharField(max_length=64)
    revoked = models.BooleanField(default=False)
    expires = models.DateTimeField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    last_used = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "catalog_apiclient"  # the name the table was created with

    def __str__(self) -> str:
        return f"{self.name} ({self.scope})"


class UserCatalogAccess(models.Model):
    """The catalogs one person may see: a person without this row sees every
    catalog ("all catalogs" is the absence of a limit); a row with an empty list
    sees none (fail closed, identity.access).

    The people's counterpart of ``ApiClient.catalogs`` (see identity.access)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="catalog_access",
    )
    catalogs = models.JSONField(default=list, blank=True)

    class Meta:
        db_table = "catalog_usercatalogaccess"  # the name it was created with

    def __str__(self) -> str:
        return f"{self.user_id}: {', '.join(self.catalogs) or 'no catalogs'}"
