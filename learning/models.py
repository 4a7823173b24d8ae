"""A labelled request: a query (or the chat messages) and the tools that fit it; an
empty ``tools`` means no tool fits. Labels proposed from use count only once a
curator accepts them."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from catalog.models import Catalog
from config.modelfields import person_link


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
        constraints = [
            # A selection is proposed once, whatever became of the proposal.
            models.UniqueConstraint(
                fields=["catalog", "selection_id"],
                condition=models.Q(selection_id__isnull=False),
                name="one_label_per_selection",
            )
        ]

    def __str__(self) -> str:
        return (self.query or "(messages)")[:60]


class EvaluationState(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"


class Evaluation(models.Model):
    """One run of a catalog's labelled requests through the real selection path:
    the metrics of shared/bench/README.md (learning.metrics) and, per request
    (at most ``learning.evaluation.MAX_ROWS``), the rank of each expected tool.

    ``settings_data`` is set when other settings were tried (never saved as the
    catalog's); ``payload`` holds inline labels until the run ends, then is
    cleared (inline labels are never stored as labels)."""

    catalog = models.ForeignKey(
        Catalog, on_delete=models.CASCADE, related_name="evaluations"
    )
    state = models.CharField(
        max_length=10, choices=EvaluationState.choices, default=EvaluationState.QUEUED
    )
    source = models.CharField(max_length=10, default="labels")  # labels | inline
    settings_version = models.PositiveIntegerField(default=0)
    settings_data = models.JSONField(null=True, blank=True)
    catalog_version = models.PositiveBigIntegerField(default=0)
    payload = models.JSONField(null=True, blank=True)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    metrics = models.JSONField(default=dict, blank=True)
    rows = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created = models.DateTimeField(auto_now_add=True, db_index=True)
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)
    # Set on claim and with each progress update; a running row whose heartbeat
    # stopped is failed by learning.services.stalled.
    heartbeat = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["catalog", "-id"])]

    def __str__(self) -> str:
        return f"evaluation {self.pk} of {self.catalog_id} ({self.state})"

    @property
    def percent(self) -> int:
        if self.total == 0:
            return 100 if self.state == EvaluationState.SUCCEEDED else 0
        return min(100, round(100 * self.done / self.total))

    @property
    def headline(self) -> dict[str, float | None]:
        """NDCG@10 and R@3 for lists (template names cannot hold "@")."""
        return {"ndcg": self.metrics.get("NDCG@10"), "r3": self.metrics.get("R@3")}

    @property
    def settings_label(self) -> str:
        """Which settings ran: the catalog's version, or the ones tried."""
        if self.settings_data is not None:
            return f"tried (on v{self.settings_version})"
        return f"v{self.settings_version}"


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
    created_by = person_link()
    created = models.DateTimeField(auto_now_add=True, db_index=True)
    finished = models.DateTimeField(null=True, blank=True)
    # As Evaluation.heartbeat.
    heartbeat = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["catalog", "version"], name="one_learnt_model_version"
            )
        ]

    def __str__(self) -> str:
        return f"learnt model {self.version} of catalog {self.catalog_id}"
