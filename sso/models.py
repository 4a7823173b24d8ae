"""Who signed in through the company's provider, what its claim maps to, and
whether passwords still work.

A person is matched by the provider's issuer and subject, never by an email or a
username alone: those can be changed, reused or typed by someone else.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import Group
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models

CLAIM_VALUE_MAX = 255
# What one sign-in keeps of the claim (a provider may send hundreds of groups).
CLAIM_VALUES_KEPT = 500


class Identity(models.Model):
    """A person's account at the provider (issuer + subject), linked on first
    sign-in; ``claim_values`` is what the groups claim held at the last one, so a
    change of mapping reaches the people it names at once."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="identities"
    )
    issuer = models.CharField(max_length=500)
    subject = models.CharField(max_length=255)
    claim_values = ArrayField(
        models.CharField(max_length=CLAIM_VALUE_MAX), default=list, blank=True
    )
    created = models.DateTimeField(auto_now_add=True)
    last_sign_in = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "identities"
        constraints = [
            models.UniqueConstraint(
                fields=["issuer", "subject"], name="sso_identity_issuer_subject"
            )
        ]
        indexes = [GinIndex(fields=["claim_values"], name="sso_identity_claims")]

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer}"


class ClaimMapping(models.Model):
    """One value of the provider's groups claim and the Quiver groups and catalogs
    it gives (``catalogs`` None: every catalog). A person gets the union of every
    mapping their claim names; one it names none of gets no access."""

    value = models.CharField(max_length=CLAIM_VALUE_MAX, unique=True)
    groups = models.ManyToManyField(Group, blank=True, related_name="claim_mappings")
    catalogs = ArrayField(models.CharField(max_length=50), null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["value"]

    def __str__(self) -> str:
        return self.value


class SignInPolicy(models.Model):
    """The console's sign-in switch, one row: password sign-in on or off (off also
    when ``QUIVER_PASSWORD_LOGIN`` is false; the break-glass admin keeps it)."""

    password_login = models.BooleanField(default=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "sign-in policy"

    def __str__(self) -> str:
        return "password sign-in " + ("on" if self.password_login else "off")
