"""An approval covers exactly one tool with exactly those arguments, once, until it
expires. Every attempt to call a tool is recorded as ``tool_call`` audit events
(calls.records); the worker's sweep of calls left without an outcome keeps its
place in ``CallSweep``."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from catalog.models import Catalog, Tool


class ApprovalStatus(models.TextChoices):
    PENDING = "pending", "Waiting for a person"
    APPROVED = "approved", "Approved"
    DENIED = "denied", "Denied"
    EXPIRED = "expired", "Expired"
    USED = "used", "Approved and used"


class Approval(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    catalog = models.ForeignKey(Catalog, on_delete=models.CASCADE, related_name="+")
    tool = models.ForeignKey(
        Tool, null=True, on_delete=models.SET_NULL, related_name="approvals"
    )
    tool_name = models.CharField(max_length=200)
    tool_version = models.PositiveIntegerField()
    arguments = models.JSONField(default=dict, blank=True)  # a tool may take none
    arguments_hash = models.CharField(max_length=64)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    requester_name = models.CharField(max_length=150)
    selection_id = models.UUIDField(null=True, blank=True)
    request_id = models.UUIDField(null=True, blank=True)
    status = models.CharField(
        max_length=10, choices=ApprovalStatus.choices, default=ApprovalStatus.PENDING
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    decider_name = models.CharField(max_length=150, blank=True, default="")
    reason = models.TextField(blank=True, default="")
    created = models.DateTimeField(auto_now_add=True, db_index=True)
    decided = models.DateTimeField(null=True, blank=True)
    expires = models.DateTimeField()
    used = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]
        indexes = [models.Index(fields=["status", "created"])]
        # Held by the ``approver`` and ``admin`` groups (calls/migrations/0002).
        permissions = [("decide_approval", "Can approve or deny tool calls")]

    def __str__(self) -> str:
        return f"{self.tool_name} ({self.status})"


class CallSweep(models.Model):
    """How far the worker's sweep has judged the calls' ``started`` events:
    every one made up to ``through`` has an outcome, its own or ``interrupted``
    (calls.attempts). One row, locked by the sweep that runs."""

    through = models.DateTimeField()

    def __str__(self) -> str:
        return f"calls swept through {self.through:%Y-%m-%d %H:%M:%S}"
