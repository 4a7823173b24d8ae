"""Per-catalog selection settings (versioned) and the LLM answer cache."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models

from catalog.models import Catalog
from selection.querysets import (
    SelectionSettingsChangeQuerySet,
    SelectionSettingsQuerySet,
)


class SelectionSettings(models.Model):
    """The curator-editable engine settings of one catalog (see EngineSettings).

    ``data`` holds only what differs from the engine's defaults; ``version`` goes up
    on every change and is part of the answer-cache key."""

    catalog = models.OneToOneField(
        Catalog, on_delete=models.CASCADE, related_name="selection_settings"
    )
    data = models.JSONField(default=dict, blank=True)
    version = models.PositiveIntegerField(default=1)
    updated = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )

    objects = SelectionSettingsQuerySet.as_manager()

    def __str__(self) -> str:
        return f"{self.catalog_id} settings v{self.version}"


class SelectionSettingsChange(models.Model):
    """Append-only history of settings changes, so any version can be shown (and
    restored: a restore is a new change whose ``after`` equals an earlier one's).

    ``reason`` is the curator's optional note, or says which version a restore
    brought back."""

    catalog = models.ForeignKey(Catalog, on_delete=models.CASCADE, related_name="+")
    version = models.PositiveIntegerField()
    before = models.JSONField(default=dict)
    after = models.JSONField(default=dict)
    actor_name = models.CharField(max_length=150)
    reason = models.CharField(max_length=500, blank=True, default="")
    created = models.DateTimeField(auto_now_add=True)

    objects = SelectionSettingsChangeQuerySet.as_manager()

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"{self.catalog_id} settings v{self.version}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None:
            raise RuntimeError("settings history cannot be modified")
        super().save(*args, **kwargs)


class LLMAnswer(models.Model):
    """A model's answer to one selection prompt (seed 003: same query, same tools).

    Keyed by the hash of (model, prompt); failures are never cached."""

    key = models.CharField(max_length=64, unique=True)
    model = models.CharField(max_length=200)
    answer = models.TextField()
    created = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.model} {self.key[:12]}"
