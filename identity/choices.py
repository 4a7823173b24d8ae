"""Enumerations of the identity app."""

from django.db import models


class ApiScope(models.TextChoices):
    AGENT = "agent", "Agent"
    CURATOR = "curator", "Curator"
    COMPLIANCE = "compliance", "Compliance"
    ADMIN = "admin", "Admin"
