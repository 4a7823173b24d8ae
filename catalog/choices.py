"""Enumerations of the catalog app."""

from django.db import models


class ToolStatus(models.TextChoices):
    ACTIVE = "active", "Active"
    DISABLED = "disabled", "Disabled"
    DEPRECATED = "deprecated", "Deprecated"


class RiskLevel(models.TextChoices):
    LOW = "low", "Low"
    MEDIUM = "medium", "Medium"
    HIGH = "high", "High"
    CRITICAL = "critical", "Critical"


class NoSchemaMode(models.TextChoices):
    NONE = "", "—"
    READ_ONLY = "read-only", "Read-only"
    HUMAN_APPROVAL = "human-approval", "Human approval"
    FULL = "full", "Full"


class ChangeAction(models.TextChoices):
    CREATE = "create", "Created"
    UPDATE = "update", "Updated"
    DELETE = "delete", "Deleted"


class EmbeddingStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    READY = "ready", "Ready"
    FAILED = "failed", "Failed"


class ImportOutcome(models.TextChoices):
    CREATED = "created", "Created"
    UPDATED = "updated", "Updated"
    UNCHANGED = "unchanged", "Unchanged"
    REJECTED = "rejected", "Rejected"
