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


class LearnState(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"


class LearntModel(models.Model):
    """One learn of a catalog: what its accepted labels taught (learning.fit) and
    the cross-validated evaluation that decides whether it helps.

    The row is also the learn job (state, progress). ``params`` holds the fusion
    weights, neighbour count and no-tool threshold; ``examples`` each labelled
    request's text and tool names; ``vectors`` their float32 unit vectors (in the
    catalog's ``embedding_model``), row-aligned with ``examples``. A catalog's
    selection settings apply a model by naming it (``learnt_model``)."""

    catalog = models.ForeignKey(
        Catalog, on_delete=models.CASCADE, related_name="learnt_models"
    )
    version = models.PositiveIntegerField()
    state = models.CharField(
        max_length=10, choices=LearnState.choices, default=LearnState.QUEUED
    )
    progress = models.PositiveSmallIntegerField(default=0)
    error = models.TextField(blank=True, default="")
    apply = models.BooleanField(default=False)
    accept_regression = models.TextField(blank=True, default="")
    embedding_model = models.CharField(max_length=200, blank=True, default="")
    params = models.JSONField(default=dict, blank=True)
    examples = models.JSONField(default=list, blank=True)
    vectors = models.BinaryField(default=b"", blank=True)
    cv = models.JSONField(default=dict, blank=True)
    proposed_settings = models.JSONField(null=True, blank=True)
    applied_settings_version = models.PositiveIntegerField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created = models.DateTimeField(auto_now_add=True, db_index=True)
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["catalog", "version"], name="one_learnt_model_version"
            )
        ]

    def __str__(self) -> str:
        return f"learnt model {self.version} of catalog {self.catalog_id}"
