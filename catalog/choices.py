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


class JobKind(models.TextChoices):
    IMPORT = "import", "Import"
    REINDEX = "reindex", "Re-index"
    BULK = "bulk", "Bulk edit"
    SYNC = "sync", "Source sync"


class JobState(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"


class ImportOutcome(models.TextChoices):
    CREATED = "created", "Created"
    UPDATED = "updated", "Updated"
    UNCHANGED = "unchanged", "Unchanged"
    REJECTED = "rejected", "Rejected"


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
