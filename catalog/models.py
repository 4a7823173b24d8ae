"""Catalog models: catalogs, tools, their append-only change records and
embeddings."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from pgvector.django import VectorField

from catalog.choices import (
    ChangeAction,
    EmbeddingStatus,
    NoSchemaMode,
    ReviewKind,
    ReviewState,
    RiskLevel,
    ToolStatus,
)
from catalog.querysets import CatalogQuerySet, ToolQuerySet, ToolReviewQuerySet
from config.exceptions import AppendOnlyError
from config.modelfields import person_link


class Catalog(models.Model):
    """A named set of tools; agents select within one catalog.

    ``version`` goes up by one on every change to any of its tools, so a selection
    answer can be cached on exactly (catalog, version, request)."""

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    version = models.PositiveBigIntegerField(default=1)
    # The embedding model whose vectors selection uses; switches only once a
    # re-embed with a new model has finished for every tool.
    active_embedding_model = models.CharField(max_length=200, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    objects = CatalogQuerySet.as_manager()

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


# What Quiver keeps about a tool beside its definition; no caller writes these.
TOOL_BOOKKEEPING = (
    "embedding_status",
    "embedding_error",
    "created",
    "updated",
    "created_by",
    "updated_by",
)


class Tool(models.Model):
    """One tool: the canonical definition (schema kept verbatim) and its metadata."""

    catalog = models.ForeignKey(Catalog, on_delete=models.CASCADE, related_name="tools")
    name = models.CharField(max_length=200)
    provider_name = models.CharField(max_length=64)
    # The name its file or server gave it, when Quiver gave it a safe one.
    original_name = models.CharField(max_length=500, blank=True, default="")
    title = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    parameters = models.JSONField(null=True, blank=True)
    strict = models.BooleanField(null=True, blank=True)
    allow_no_schema = models.BooleanField(default=False)
    no_schema_mode = models.CharField(
        max_length=20, choices=NoSchemaMode.choices, blank=True, default=""
    )
    safe = models.BooleanField(default=True)
    risk_level = models.CharField(
        max_length=10, choices=RiskLevel.choices, default=RiskLevel.LOW
    )
    requires_approval = models.BooleanField(default=False)
    capabilities = models.JSONField(default=list, blank=True)
    category = models.CharField(max_length=100, blank=True)
    tags = models.JSONField(default=list, blank=True)
    keywords = models.JSONField(default=list, blank=True)
    examples = models.JSONField(default=list, blank=True)
    avoid_when = models.TextField(blank=True)
    allowed_roles = models.JSONField(default=list, blank=True)
    cost_per_call = models.DecimalField(max_digits=14, decimal_places=6, default=0)
    currency = models.CharField(max_length=3, default="USD")
    annotations = models.JSONField(default=dict, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    status = models.CharField(
        max_length=12, choices=ToolStatus.choices, default=ToolStatus.ACTIVE
    )
    version = models.PositiveIntegerField(default=1)
    content_hash = models.CharField(max_length=64)
    embedding_status = models.CharField(
        max_length=10, choices=EmbeddingStatus.choices, default=EmbeddingStatus.PENDING
    )
    embedding_error = models.TextField(blank=True)
    # The catalog version its last change made (catalog.versions: what a reader
    # who sees it reads as the catalog's version).
    changed_version = models.PositiveBigIntegerField(default=0)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)
    created_by = person_link()
    updated_by = person_link()

    objects = ToolQuerySet.as_manager()

    class Meta:
        ordering = ["catalog_id", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["catalog", "name"], name="tool_name_unique_in_catalog"
            ),
            models.UniqueConstraint(
                fields=["catalog", "provider_name"],
                name="tool_provider_name_unique_in_catalog",
            ),
        ]
        permissions = [
            ("use_unsafe_tools", "May be offered tools marked unsafe"),
        ]
        indexes = [
            models.Index(fields=["catalog", "status"]),
            models.Index(fields=["catalog", "category"]),
            models.Index(fields=["catalog", "embedding_status"]),
        ]

    def __str__(self) -> str:
        return f"{self.catalog_id}:{self.name}"


class ToolName(models.Model):
    """One look a tool holds in its catalog (``catalog.names``): the look
    (``catalog.naming.look``) of its name, its provider name or its original name.
    ``(look, catalog)`` is unique, so no two tools of a catalog hold names that
    are equal or look alike, whatever wrote them and however many at once; the
    same index resolves a called name. No tool: several tools held the look
    before the rule, and a call by it is refused as ambiguous."""

    look = models.CharField(max_length=64)
    catalog = models.ForeignKey(Catalog, on_delete=models.CASCADE, related_name="+")
    tool = models.ForeignKey(
        Tool, null=True, on_delete=models.CASCADE, related_name="looks"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["look", "catalog"], name="tool_name_look_unique_in_catalog"
            )
        ]

    def __str__(self) -> str:
        return f"{self.catalog_id}:{self.look[:12]} -> {self.tool_id}"


class ToolChange(models.Model):
    """Append-only record of one create, update or delete of a tool.

    ``before``/``after`` hold the canonical JSON, so any earlier version of a tool
    can be shown and two versions compared, even after the tool itself is deleted."""

    catalog = models.ForeignKey(Catalog, on_delete=models.CASCADE, related_name="+")
    tool = models.ForeignKey(
        Tool, null=True, on_delete=models.SET_NULL, related_name="changes"
    )
    tool_name = models.CharField(max_length=200)
    action = models.CharField(max_length=10, choices=ChangeAction.choices)
    version = models.PositiveIntegerField()
    before = models.JSONField(null=True)
    after = models.JSONField(null=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_name = models.CharField(max_length=150, blank=True)
    request_id = models.UUIDField(null=True)
    # Why the curator made the change, as typed (bounded: catalog.services.tools).
    reason = models.CharField(max_length=500, blank=True, default="")
    # The catalog version this change made (0: made before it was kept).
    catalog_version = models.PositiveBigIntegerField(default=0)
    # Whether it may have hidden the tool from someone who saw it (a deletion, a
    # new safe flag or roles): catalog.versions reads its ``before`` then.
    hides = models.BooleanField(default=False)
    created = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-id"]
        indexes = [
            models.Index(fields=["catalog", "tool_name", "version"]),
            models.Index(
                fields=["catalog", "catalog_version"],
                condition=models.Q(hides=True),
                name="toolchange_hiding",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tool_name} v{self.version} {self.action}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None:
            raise AppendOnlyError("tool change records cannot be modified")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise AppendOnlyError("tool change records cannot be deleted")


class ToolEmbedding(models.Model):
    """A tool's vector for one embedding model, with the hash of the text it came from.

    The column has no fixed dimension so vectors of several models can coexist while a
    catalog is re-embedded; each model gets its own partial HNSW index
    (catalog.services.embeddings.ensure_hnsw_index) and queries always filter on
    ``model_id``."""

    tool = models.ForeignKey(Tool, on_delete=models.CASCADE, related_name="embeddings")
    catalog = models.ForeignKey(Catalog, on_delete=models.CASCADE, related_name="+")
    model_id = models.CharField(max_length=200)
    dimension = models.PositiveIntegerField()
    text_hash = models.CharField(max_length=64)
    embedding = VectorField()
    created = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tool", "model_id"], name="one_embedding_per_tool_and_model"
            )
        ]
        indexes = [models.Index(fields=["catalog", "model_id"])]

    def __str__(self) -> str:
        return f"{self.tool_id}:{self.model_id}"


class StoredQueryEncoder(models.Model):
    """A built static query encoder's file, with
    ``QUIVER_QUERY_ENCODER_STORE=postgres``: written in the transaction of its
    ``query_encoder`` audit event; every process copies the newest one for its
    model's weights into its own state directory
    (catalog.services.query_encoder_store)."""

    weights_digest = models.CharField(max_length=64)
    encoder_id = models.CharField(max_length=32)
    trained_on = models.IntegerField()
    data = models.BinaryField()
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "catalog_stored_query_encoder"
        indexes = [
            models.Index(fields=["weights_digest", "-id"], name="stored_encoder_newest")
        ]

    def __str__(self) -> str:
        return self.encoder_id


class DismissedPanel(models.Model):
    """A console panel a person closed for good (``catalog.first_steps``)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    panel = models.CharField(max_length=40)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "panel"], name="dismissed_panel_once_per_user"
            )
        ]

    def __str__(self) -> str:
        return f"{self.user_id}: {self.panel}"


class ToolReview(models.Model):
    """A tool definition waiting for a curator's decision, and the decision.

    ``change``: the tool's source lists a new definition; the tool keeps serving
    its pinned one (``served``) until ``proposed`` is approved, or is held out of
    service meanwhile (``suspended``, by the catalog's policy). ``new`` and
    ``flagged``: the tool itself, as written, is held (status ``held``) until it
    is approved or allowed. ``status_before`` is the status it returns to.

    ``origin`` names who proposed it (``source:<name>``, ``import``, ``edit``);
    ``proposal_key`` and ``proposal`` are the proposer's own (a source's: the
    upstream definition and its hash), read back when the review is decided.
    One pending review per tool; decided ones stay as its history."""

    catalog = models.ForeignKey(Catalog, on_delete=models.CASCADE, related_name="+")
    tool = models.ForeignKey(
        Tool, null=True, on_delete=models.SET_NULL, related_name="reviews"
    )
    tool_name = models.CharField(max_length=200)
    kind = models.CharField(max_length=10, choices=ReviewKind.choices)
    state = models.CharField(
        max_length=10, choices=ReviewState.choices, default=ReviewState.PENDING
    )
    served = models.JSONField(null=True, blank=True)
    proposed = models.JSONField()
    served_hash = models.CharField(max_length=64, blank=True, default="")
    proposed_hash = models.CharField(max_length=64)
    diff_hash = models.CharField(max_length=64)
    findings = models.JSONField(default=list, blank=True)
    risks = models.JSONField(default=list, blank=True)
    suspended = models.BooleanField(default=False)
    status_before = models.CharField(max_length=12, blank=True, default="")
    origin = models.CharField(max_length=80, blank=True, default="")
    proposal_key = models.CharField(max_length=64, blank=True, default="")
    proposal = models.JSONField(default=dict, blank=True)
    created = models.DateTimeField(auto_now_add=True, db_index=True)
    decided = models.DateTimeField(null=True, blank=True)
    decided_by = person_link()
    decider_name = models.CharField(max_length=150, blank=True, default="")
    reason = models.CharField(max_length=500, blank=True, default="")

    objects = ToolReviewQuerySet.as_manager()

    class Meta:
        ordering = ["-id"]
        constraints = [
            # A tool waits for at most one review of each kind (a held tool's
            # own and a change its source proposes may both be open).
            models.UniqueConstraint(
                fields=["tool", "kind"],
                condition=models.Q(state="pending"),
                name="one_pending_review_per_tool_and_kind",
            )
        ]
        indexes = [models.Index(fields=["catalog", "state"])]

    def __str__(self) -> str:
        return f"{self.tool_name} {self.kind} ({self.state})"
