"""Serializers of the catalog API: they validate and shape, they don't decide."""

from __future__ import annotations

from datetime import datetime
from functools import cached_property
from typing import Any

from rest_framework import serializers

from catalog import job_reads
from catalog.choices import EmbeddingStatus, ImportOutcome, ToolStatus
from catalog.formats import FORMATS
from catalog.models import TOOL_BOOKKEEPING, Catalog, Tool, ToolChange
from catalog.services.bulk_edit import BULK_MAX_TOOLS
from catalog.services.import_names import NAME_CHOICES, REFUSE
from catalog.services.tools import MAX_REASON_CHARS
from catalog.sizes import (
    MAX_STORED_CHARS,
    MAX_TOOL_CHARS,
    oversized_fields,
    size_problem,
)
from catalog.spec import SpecError, ToolSpec, spec_from_dict
from catalog.versions import Seen, seen_by, seen_by_each
from config.strict import StrictFieldsMixin
from identity.access import access_for
from jobs.models import Job


def check_stored_size(name: str, value: Any, limit: int = MAX_STORED_CHARS) -> None:
    """A 400 naming ``name`` when ``value`` is longer than ``limit`` as stored
    (catalog.sizes)."""
    problem = size_problem(name, value, limit)
    if problem:
        raise serializers.ValidationError(problem)


class CatalogListSerializer(serializers.ListSerializer):
    """A page of catalogs: what its reader is told of each (``seen_by_each``)
    read for the whole page at once, not catalog by catalog."""

    def to_representation(self, data: Any) -> list[Any]:
        catalogs = list(data)
        request = self.context.get("request")
        if request is not None:
            seen = seen_by_each(catalogs, access_for(request.user))
            self.child._seen_kept.update(seen)  # type: ignore[union-attr]
        return super().to_representation(catalogs)


class CatalogSerializer(StrictFieldsMixin, serializers.ModelSerializer):
    tool_count = serializers.IntegerField(read_only=True, default=0)
    counts = serializers.SerializerMethodField()
    version = serializers.SerializerMethodField(
        help_text="the catalog's version at the last change the reader could see"
    )
    updated = serializers.SerializerMethodField(
        help_text="when the last change the reader could see was made"
    )

    class Meta:
        model = Catalog
        fields = [
            "slug",
            "name",
            "description",
            "version",
            "active_embedding_model",
            "tool_count",
            "counts",
            "created",
            "updated",
        ]
        read_only_fields = ["version", "active_embedding_model", "created", "updated"]
        list_serializer_class = CatalogListSerializer

    def get_version(self, obj: Catalog) -> int:
        return self._seen(obj).version

    def get_updated(self, obj: Catalog) -> datetime:
        return self._seen(obj).updated

    def _seen(self, obj: Catalog) -> Seen:
        """What the reader in the context is told of the catalog (no reader:
        nothing hidden from it, as for the curator who just made it)."""
        request = self.context.get("request")
        if request is None:
            return Seen(int(obj.version), obj.updated)
        kept = self._seen_kept
        if obj.pk not in kept:
            kept[obj.pk] = seen_by(obj, access_for(request.user))
        return kept[obj.pk]

    @cached_property
    def _seen_kept(self) -> dict[int, Seen]:
        return {}

    def get_counts(self, obj: Catalog) -> dict[str, dict[str, int]]:
        def value(name: str) -> int:
            return int(getattr(obj, name, 0) or 0)

        return {
            "status": {s: value(f"status_{s}") for s in ToolStatus.values},
            "embedding": {
                s: value(f"embedding_{s}") for s in ("pending", "ready", "failed")
            },
        }


class ToolSerializer(serializers.ModelSerializer):
    """Output: the canonical fields plus bookkeeping. Input: see ToolInputSerializer."""

    catalog: serializers.SlugRelatedField = serializers.SlugRelatedField(
        slug_field="slug", read_only=True
    )
    # Null for changes made by the system (bootstrap, an import's worker).
    created_by: serializers.SlugRelatedField = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    updated_by: serializers.SlugRelatedField = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )

    class Meta:
        model = Tool
        fields = [
            "id",
            "catalog",
            *ToolSpec.field_names(),
            "prompt_tokens",
            "version",
            "content_hash",
            *TOOL_BOOKKEEPING,
        ]
        read_only_fields = fields


class ToolInputSerializer(serializers.Serializer):
    """Any subset of the canonical tool fields, checked by catalog.spec."""

    catalog = serializers.SlugField(required=False, default="default")

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise serializers.ValidationError({"": ["body: must be a JSON object"]})
        _check_tool_size(data)
        payload = dict(data)
        catalog = payload.pop("catalog", "default")
        reason = payload.pop("reason", "")
        if not isinstance(catalog, str):
            raise serializers.ValidationError({"catalog": ["catalog: must be a slug"]})
        try:
            spec = spec_from_dict(payload)
        except SpecError as exc:
            raise serializers.ValidationError({exc.field: [str(exc)]}) from exc
        return {"catalog": catalog, "spec": spec, "reason": reason}


def _check_tool_size(data: dict[str, Any]) -> None:
    """A 400 naming each field past ``MAX_TOOL_CHARS`` (the body, under "", when
    only the whole is)."""
    problems = oversized_fields(data, MAX_TOOL_CHARS)
    if problems:
        raise serializers.ValidationError(
            {name: [rule] for name, rule in problems.items()}
        )


class ToolStatusSerializer(StrictFieldsMixin, serializers.Serializer):
    status = serializers.ChoiceField(choices=ToolStatus.choices)


class ToolChangeSerializer(serializers.ModelSerializer):
    class Meta:
        model = ToolChange
        fields = [
            "id",
            "tool_name",
            "action",
            "version",
            "before",
            "after",
            "actor_name",
            "request_id",
            "reason",
            "created",
        ]


class JobSerializer(serializers.ModelSerializer):
    """A job as its reader may see it (``job_reads.job_for_reader``): the request in
    the context is the reader; without one nothing is named."""

    catalog: serializers.SlugRelatedField = serializers.SlugRelatedField(
        slug_field="slug", read_only=True
    )
    percent = serializers.IntegerField(read_only=True)
    hidden_items = serializers.SerializerMethodField(
        help_text="items about tools the reader cannot see: counted, not named"
    )
    hidden_errors = serializers.SerializerMethodField(
        help_text="errors not shown (only whole-catalog readers see them)"
    )

    def _readable(self, job: Job) -> job_reads.JobForReader:
        cache: dict[int, job_reads.JobForReader] = self.__dict__.setdefault("_seen", {})
        if job.pk not in cache:
            request = self.context.get("request")
            cache[job.pk] = job_reads.job_for_reader(
                job, getattr(request, "user", None)
            )
        return cache[job.pk]

    def to_representation(self, instance: Job) -> dict[str, Any]:
        data = dict(super().to_representation(instance))
        readable = self._readable(instance)
        data["items"], data["errors"] = readable.items, readable.errors
        return data

    def get_hidden_items(self, job: Job) -> int:
        return self._readable(job).hidden_items

    def get_hidden_errors(self, job: Job) -> int:
        return self._readable(job).hidden_errors

    class Meta:
        model = Job
        fields = [
            "id",
            "kind",
            "catalog",
            "state",
            "total",
            "done",
            "percent",
            "counts",
            "items",
            "hidden_items",
            "errors",
            "hidden_errors",
            "options",
            "created",
            "started",
            "finished",
        ]


class ExportQuerySerializer(StrictFieldsMixin, serializers.Serializer):
    format = serializers.ChoiceField(choices=FORMATS, default="canonical")
    status = serializers.ChoiceField(choices=ToolStatus.choices, required=False)


class ImportQuerySerializer(StrictFieldsMixin, serializers.Serializer):
    format = serializers.ChoiceField(choices=FORMATS, required=False)
    dry_run = serializers.BooleanField(
        required=False,
        default=False,
        help_text="true: answer what the import would do and write nothing",
    )
    names = serializers.ChoiceField(
        choices=NAME_CHOICES,
        required=False,
        default=REFUSE,
        help_text="a name breaking the tool-name rule: refuse the item (default), "
        "or rename it to a safe name and keep the file's as its original_name",
    )


class ImportItemSerializer(serializers.Serializer):
    index = serializers.IntegerField()
    name = serializers.CharField(allow_null=True)
    outcome = serializers.ChoiceField(choices=ImportOutcome.choices)
    reason = serializers.CharField(allow_blank=True)
    renamed_from = serializers.CharField(
        required=False, help_text="the item's name in the file, when it changed"
    )


class ImportReportSerializer(serializers.Serializer):
    """A dry run's answer: what each item would become; nothing was written."""

    dry_run = serializers.BooleanField()
    catalog = serializers.CharField()
    format = serializers.CharField(help_text="the format read (given or detected)")
    names = serializers.ChoiceField(choices=NAME_CHOICES)
    total = serializers.IntegerField()
    counts = serializers.DictField(child=serializers.IntegerField())
    renamed = serializers.IntegerField(
        help_text="items imported under another name than the file's"
    )
    items = ImportItemSerializer(many=True)


class ToolFilterSerializer(StrictFieldsMixin, serializers.Serializer):
    """The tool list's filters, as a bulk edit's ``filter`` object."""

    catalog = serializers.CharField(required=False, max_length=64)
    category = serializers.CharField(required=False, max_length=100)
    status = serializers.ChoiceField(choices=ToolStatus.choices, required=False)
    embedding_status = serializers.ChoiceField(
        choices=EmbeddingStatus.choices, required=False
    )
    tag = serializers.CharField(required=False, max_length=100)
    role = serializers.CharField(required=False, max_length=100)
    safe = serializers.BooleanField(required=False, allow_null=True, default=None)
    q = serializers.CharField(required=False, max_length=200, allow_blank=True)


class ToolBulkSerializer(StrictFieldsMixin, serializers.Serializer):
    """Which tools (``ids`` or ``filter``) and what to do (``set`` or ``delete``);
    catalog.services.bulk_edit checks the change itself."""

    ids = serializers.ListField(
        child=serializers.IntegerField(min_value=1),
        required=False,
        min_length=1,
        max_length=BULK_MAX_TOOLS,
    )
    filter = ToolFilterSerializer(required=False)
    set = serializers.JSONField(required=False)
    delete = serializers.JSONField(required=False)
    reason = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=MAX_REASON_CHARS,
        trim_whitespace=False,
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("ids" in attrs) == ("filter" in attrs):
            raise serializers.ValidationError(
                {"ids": ["ids: give either ids or filter, not both or neither"]}
            )
        return attrs


class ToolExportQuerySerializer(serializers.Serializer):
    format = serializers.ChoiceField(choices=["csv"], default="csv")
