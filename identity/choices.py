"""Enumerations of the identity app."""

from django.db import models


class ApiScope(models.TextChoices):
    AGENT = "agent", "Agent"
    CURATOR = "curator", "Curator"
    COMPLIANCE = "compliance", "Compliance"
    ADMIN = "admin", "Admin"


class ClientKind(models.TextChoices):
    """What an API client authenticates with: a bearer key it was given, or
    OAuth access tokens of a connection a person approved (oauth/): such a
    client has no key and is no key to list, edit or rotate."""

    KEY = "key", "API key"
    OAUTH = "oauth", "OAuth connection"
