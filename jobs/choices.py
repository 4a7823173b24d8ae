"""Enumerations of the jobs app."""

from django.db import models


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
