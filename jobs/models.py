"""The Job row: a background job (an import, a re-index, a bulk edit, a sync) with
progress a person can watch, claimed by one worker at a time (jobs.services)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from jobs.choices import JobKind, JobState
from jobs.querysets import JobQuerySet


class Job(models.Model):
    """A background job (import, re-index) with progress a person can watch."""

    kind = models.CharField(max_length=10, choices=JobKind.choices)
    # Every job works on one catalog and is seen by whoever may see that catalog.
    catalog = models.ForeignKey(
        "catalog.Catalog", on_delete=models.CASCADE, related_name="jobs"
    )
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
        db_table = "catalog_job"  # the name the table was created with
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
