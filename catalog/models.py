"""Catalog models: catalogs, tools, their append-only change records, embeddings, jobs
and the API clients that agents and scripts authenticate with."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from pgvector.django import VectorField

from catalog.choices import (
    ApiScope,
    ChangeAction,
    ClientKind,
    EmbeddingStatus,
    JobKind,
    JobState,
    NoSchemaMode,
    RiskLevel,
    ToolStatus,
)
from catalog.querysets import CatalogQuerySet, JobQuerySet, ToolQuerySet
from config.exceptions import AppendOnlyError


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
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )

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
    created = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["catalog", "tool_name", "version"])]

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
    catalog is re-embedded; each model gets its own partial HNSW index (see
    catalog.embeddings.index) and queries always filter on ``model_id``."""

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


class Job(models.Model):
    """A background job (import, re-index) with progress a person can watch."""

    kind = models.CharField(max_length=10, choices=JobKind.choices)
    catalog = models.ForeignKey(Catalog, on_delete=models.CASCADE, related_name="jobs")
    state = models.CharField(
        max_length=10, choices=JobState.choices, default=JobState.QUEUED
    )
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    counts = models.JSONField(default=dict, blank=True)
    items = models.JSONField(default=list, blank=True)
    errors = models.JSONField(default=list, blank=True)
    # What the user gave (an import document, the options of a re-index): kept whole.
    payload = models.JSONField(null=True, blank=True)
    options = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created = models.DateTimeField(auto_now_add=True, db_index=True)
    started = models.DateTimeField(null=True, blank=True)
    # Renewed every third of QUIVER_JOB_LEASE_S while it runs; a running job whose
    # heartbeat is older than the lease belongs to a dead worker.
    heartbeat = models.DateTimeField(null=True, blank=True)
    # Who holds the job while it runs: a job of a pid gone from this host is free.
    worker_host = models.CharField(max_length=255, blank=True, default="")
    worker_pid = models.PositiveIntegerField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)

    objects = JobQuerySet.as_manager()

    class Meta:
        ordering = ["-id"]
        indexes = [
            # The jobs that wait or run, oldest first: the sweeper's and the
            # metrics' reads stay small however many finished jobs there are.
            models.Index(
                fields=["state", "created"],
                condition=models.Q(state__in=["queued", "running"]),
                name="job_waiting",
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind} job {self.pk} ({self.state})"

    @property
    def percent(self) -> int:
        if self.total == 0:
            return 100 if self.state == JobState.SUCCEEDED else 0
        return min(100, round(100 * self.done / self.total))


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
    # The key that made this one: it stops when any ancestor stops (catalog.auth).
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

    def __str__(self) -> str:
        return f"{self.name} ({self.scope})"


class UserCatalogAccess(models.Model):
    """The catalogs one person may see: a person without this row sees every
    catalog ("all catalogs" is the absence of a limit); a row with an empty list
    sees none (fail closed, catalog.access).

    The people's counterpart of ``ApiClient.catalogs`` (see catalog.access)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="catalog_access",
    )
    catalogs = models.JSONField(default=list, blank=True)

    def __str__(self) -> str:
        return f"{self.user_id}: {', '.join(self.catalogs) or 'no catalogs'}"


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
