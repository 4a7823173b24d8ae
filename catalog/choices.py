"""Enumerations of the catalog app."""

from django.db import models


class ToolStatus(models.TextChoices):
    ACTIVE = "active", "Active"
    DISABLED = "disabled", "Disabled"
    DEPRECATED = "deprecated", "Deprecated"
    # Out of service until a curator decides its review (catalog.services.pinning);
    # only a review sets or lifts it.
    HELD = "held", "Held for review"


class ReviewKind(models.TextChoices):
    CHANGE = "change", "Changed upstream"
    NEW = "new", "New from a source"
    FLAGGED = "flagged", "Flagged by screening"


class ReviewState(models.TextChoices):
    PENDING = "pending", "Waiting for review"
    APPROVED = "approved", "Approved"
    ALLOWED = "allowed", "Allowed despite screening"
    REFUSED = "refused", "Refused"
    WITHDRAWN = "withdrawn", "Withdrawn"


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
