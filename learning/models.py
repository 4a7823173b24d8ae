"""A labelled request: a query (or the chat messages) and the tools that fit it; an
empty ``tools`` means no tool fits. Labels proposed from use count only once a
curator accepts them."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from catalog.models import Catalog


class LabelOrigin(models.TextChoices):
    UPLOAD = "upload", "Uploaded by a curator"
    USE = "use", "Proposed from use"


class LabelStatus(models.TextChoices):
    ACCEPTED = "accepted", "Accepted"
    PROPOSED = "proposed", "Proposed, waiting for review"
    REJECTED = "rejected", "Rejected"


class Label(models.Model):
    catalog = models.ForeignKey(
        Catalog, on_delete=models.CASCADE, related_name="labels"
    )
    query = models.TextField(blank=True, default="")
    messages = models.JSONField(null=True, blank=True)
    tools = models.JSONField(default=list, blank=True)
    origin = models.CharField(
        max_length=10, choices=LabelOrigin.choices, default=LabelOrigin.UPLOAD
    )
    status = models.CharField(
        max_length=10, choices=LabelStatus.choices, default=LabelStatus.ACCEPTED
    )
    # For a label proposed from use: the selection that offered the called tool.
    selection_id = models.UUIDField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["catalog", "status"])]

    def __str__(self) -> str:
        return (self.query or "(messages)")[:60]
