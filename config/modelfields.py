"""Model fields several apps declare alike."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models


def person_link() -> models.ForeignKey[Any, Any]:
    """Who made or decided a row: null for the system, set null when the person
    is deleted (the row stays), with no reverse accessor on the user."""
    return models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
