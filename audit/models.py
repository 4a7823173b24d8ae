"""The audit log: one append-only, hash-chained row per selection or validation."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from audit.choices import EventType, RollupKind
from audit.querysets import CALL_ID, CALL_OUTCOME, PERSON, AuditEventQuerySet
from config.exceptions import AppendOnlyError


class AuditEvent(models.Model):
    """What was asked, what was answered and why, by whom, chained by hash.

    A row is written unsealed (``seq`` and ``hash`` null) in the caller's transaction;
    the sealer (audit.sealing) later gives it its place in the chain (``seq``) and
    ``hash``, an HMAC over its content and the previous row's hash, so changing or
    removing any sealed row breaks the chain (see audit.verify)."""

    event_type = models.CharField(max_length=20, choices=EventType.choices)
    # No database constraint: deleting a user must not touch (update) audit rows;
    # actor_name keeps who it was.
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    actor_name = models.CharField(max_length=150)
    request_id = models.UUIDField()
    # The server's id of the answer this event records (a selection), unique per
    # answer; request_id is the HTTP request's, shared by a batch's items.
    selection_id = models.UUIDField(null=True, blank=True, unique=True)
    catalog_slug = models.CharField(max_length=64, db_index=True)
    catalog_version = models.PositiveBigIntegerField(default=0)
    summary = models.CharField(max_length=300, blank=True)
    input = models.JSONField(encoder=DjangoJSONEncoder)
    output = models.JSONField(encoder=DjangoJSONEncoder)
    created = models.DateTimeField(db_index=True)
    # Chain position, previous hash and hash: set once by the sealer, never again
    # (the database's trigger allows exactly that update).
    seq = models.BigIntegerField(null=True, blank=True, unique=True)
    prev_hash = models.CharField(max_length=64, blank=True, default="")
    hash = models.CharField(max_length=64, unique=True, null=True, blank=True)
    # 1: unkeyed SHA-256 (rows from before keyed hashing), 2: HMAC (audit.hashing).
    hash_version = models.PositiveSmallIntegerField(default=2)
    key_id = models.CharField(max_length=16, blank=True, default="")
    sealed_at = models.DateTimeField(null=True, blank=True)
    # The words the list's filters look for (audit.querysets.has_tokens), set by
    # the database when the row is sealed (audit/migrations/0012), whatever the
    # sealer sends; empty until then (a CHECK refuses an insert that names any).
    search_tokens = ArrayField(models.TextField(), default=list, editable=False)

    objects = models.Manager.from_queryset(AuditEventQuerySet)()

    class Meta:
        ordering = ["-id"]
        indexes = [
            models.Index(fields=["event_type", "created"]),
            models.Index(fields=["catalog_slug", "id"]),
            models.Index(
                fields=["id"],
                condition=models.Q(hash__isnull=True),
                name="audit_event_unsealed",
            ),
            # The list's filters at a million events (audit.filters, 0007).
            GinIndex(fields=["search_tokens"], name="audit_event_search"),
            models.Index(
                fields=["id"],
                condition=models.Q(
                    event_type=EventType.SELECTION, output__contains={"degraded": True}
                ),
                name="audit_event_degraded",
            ),
            models.Index(
                fields=["id"],
                condition=models.Q(event_type=EventType.SELECTION, output__tools=[]),
                name="audit_event_no_tools",
            ),
            models.Index(
                fields=["id"],
                condition=models.Q(
                    event_type=EventType.VALIDATION, output__contains={"valid": False}
                ),
                name="audit_event_invalid",
            ),
            # A tool call's outcome by the id of its ``started`` event
            # (calls.attempts: the sweep of calls left without one).
            models.Index(
                CALL_ID, condition=CALL_OUTCOME, name="audit_event_call_outcome"
            ),
            # The filter by person, newest first (audit.filters).
            models.Index(PERSON, models.F("id"), name="audit_event_person"),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} {self.request_id}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None:
            raise AppendOnlyError("audit events cannot be modified")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise AppendOnlyError("audit events cannot be deleted")


class AuditRollupHour(models.Model):
    """Derived, not the audit record: one catalog's selections and tool-call checks
    in one UTC hour, summed by audit.rollup as the sealer seals them, so the
    dashboard reads a row per hour instead of every event. Never proof of anything
    (rebuild it from the events with ``audit_rollup --rebuild``)."""

    catalog_slug = models.CharField(max_length=64)
    hour = models.DateTimeField()
    selections = models.BigIntegerField(default=0)
    no_tools = models.BigIntegerField(default=0)
    degraded = models.BigIntegerField(default=0)
    cached = models.BigIntegerField(default=0)
    checks = models.BigIntegerField(default=0)
    invalid_checks = models.BigIntegerField(default=0)
    calls = models.BigIntegerField(default=0)
    invalid_calls = models.BigIntegerField(default=0)
    not_offered = models.BigIntegerField(default=0)
    unknown_tool = models.BigIntegerField(default=0)
    not_allowed = models.BigIntegerField(default=0)

    class Meta:
        db_table = "audit_rollup_hour"
        constraints = [
            models.UniqueConstraint(
                fields=["hour", "catalog_slug"], name="audit_rollup_hour_key"
            )
        ]

    def __str__(self) -> str:
        return f"{self.catalog_slug} {self.hour:%Y-%m-%d %H:00}"


class AuditRollupName(models.Model):
    """Derived: how often a tool was offered or left out, or a rule left one out,
    in one catalog and UTC hour (see ``AuditRollupHour``)."""

    catalog_slug = models.CharField(max_length=64)
    hour = models.DateTimeField()
    kind = models.CharField(max_length=8, choices=RollupKind.choices)
    name = models.TextField()
    count = models.BigIntegerField(default=0)

    class Meta:
        db_table = "audit_rollup_name"
        constraints = [
            # Covering: the dashboard's sums are index-only scans.
            models.UniqueConstraint(
                fields=["kind", "hour", "catalog_slug", "name"],
                include=["count"],
                name="audit_rollup_name_key",
            )
        ]

    def __str__(self) -> str:
        return f"{self.catalog_slug} {self.hour:%Y-%m-%d %H:00} {self.kind} {self.name}"


class AuditRollupNameDay(models.Model):
    """Derived: ``AuditRollupName`` summed per UTC day, so a month's top tools read
    some thousand rows, not a few hundred thousand (the hourly rows serve the
    hours at a range's edges)."""

    catalog_slug = models.CharField(max_length=64)
    day = models.DateTimeField()
    kind = models.CharField(max_length=8, choices=RollupKind.choices)
    name = models.TextField()
    count = models.BigIntegerField(default=0)

    class Meta:
        db_table = "audit_rollup_name_day"
        constraints = [
            models.UniqueConstraint(
                fields=["kind", "day", "catalog_slug", "name"],
                include=["count"],
                name="audit_rollup_name_day_key",
            )
        ]

    def __str__(self) -> str:
        return f"{self.catalog_slug} {self.day:%Y-%m-%d} {self.kind} {self.name}"


class AuditRollupLatency(models.Model):
    """Derived: a histogram of the served latency (``stats.latency_ms``) per
    catalog and UTC hour, in log-spaced buckets (audit.rollup.LATENCY_BUCKET_SQL),
    for approximate p50/p95."""

    catalog_slug = models.CharField(max_length=64)
    hour = models.DateTimeField()
    bucket = models.SmallIntegerField()
    count = models.BigIntegerField(default=0)

    class Meta:
        db_table = "audit_rollup_latency"
        constraints = [
            models.UniqueConstraint(
                fields=["hour", "catalog_slug", "bucket"],
                include=["count"],
                name="audit_rollup_latency_key",
            )
        ]

    def __str__(self) -> str:
        return f"{self.catalog_slug} {self.hour:%Y-%m-%d %H:00} bucket {self.bucket}"


class AuditRollupMark(models.Model):
    """One row: the last ``seq`` summed into the rollup tables. Events after it (or
    not sealed yet) are the live tail the dashboard reads from the events table."""

    seq = models.BigIntegerField(default=0)

    class Meta:
        db_table = "audit_rollup_mark"

    def __str__(self) -> str:
        return f"summed through seq {self.seq}"


class CheckpointLine(models.Model):
    """One signed checkpoint line, with ``QUIVER_AUDIT_CHECKPOINT_STORE=postgres``:
    the exact text the checkpoint file would hold, appended under the chain lock.

    Append-only like the events (a trigger refuses UPDATE, DELETE and TRUNCATE; the
    app's role may only INSERT and SELECT), and one line follows each line at most
    (``prev_sig`` is unique), so the lines form a single chain."""

    line = models.TextField()
    sig = models.CharField(max_length=128, unique=True)
    prev_sig = models.CharField(max_length=128, unique=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "audit_checkpoint_line"

    def __str__(self) -> str:
        return f"checkpoint line {self.pk}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None:
            raise AppendOnlyError("checkpoint lines cannot be modified")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise AppendOnlyError("checkpoint lines cannot be deleted")


class AuditNote(models.Model):
    """A small record kept beside the checkpoint lines in Postgres: each sink's
    deliveries (``sinks``) and the last chain check run from the console
    (``last_verify``). A convenience for verify and its page, never evidence."""

    name = models.CharField(max_length=64, primary_key=True)
    data = models.JSONField(default=dict)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "audit_note"

    def __str__(self) -> str:
        return self.name
