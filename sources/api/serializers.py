"""Sources in the API: the input checked by type (the rules are the services'),
the output with every header value masked."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from catalog.api.serializers import JobSerializer
from sources.models import Source
from sources.secrets import masked


class SourceInputSerializer(serializers.Serializer):
    """What a caller may send to add a source (PATCH: any subset of it)."""

    name = serializers.CharField(max_length=64)
    kind = serializers.CharField(max_length=20, default="mcp")
    url = serializers.CharField(max_length=2000)
    headers = serializers.DictField(
        child=serializers.CharField(allow_blank=True, trim_whitespace=False),
        required=False,
        help_text="header name -> value; values are secrets, shown back masked",
    )
    timeout_seconds = serializers.FloatField(required=False)
    max_result_bytes = serializers.IntegerField(required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(self.initial_data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError(
                {unknown[0]: [f"{unknown[0]}: not a source field"]}
            )
        return attrs


class SourceSerializer(serializers.ModelSerializer):
    """A source as admins see it: header names with masked values, never clear;
    a stdio source shows only its settings file entry's name (``stdio_name``)."""

    catalog: serializers.SlugRelatedField = serializers.SlugRelatedField(
        slug_field="slug", read_only=True
    )
    headers = serializers.SerializerMethodField()

    def get_headers(self, source: Source) -> dict[str, str]:
        return masked(source)

    class Meta:
        model = Source
        fields = [
            "id",
            "catalog",
            "name",
            "kind",
            "url",
            "stdio_name",
            "headers",
            "timeout_seconds",
            "max_result_bytes",
            "status",
            "last_synced",
            "last_success",
            "last_outcome",
            "last_error",
            "tool_count",
            "created",
            "updated",
        ]
        read_only_fields = fields


class SourceAddedSerializer(SourceSerializer):
    """The answer to adding a source: the source and its first sync's job."""

    sync_job = JobSerializer(
        read_only=True, help_text="the first sync, queued: GET /api/v1/jobs/{id}"
    )
    warning = serializers.CharField(
        read_only=True,
        required=False,
        help_text="the task queue could not be reached: the sync runs later",
    )

    class Meta(SourceSerializer.Meta):
        fields = [*SourceSerializer.Meta.fields, "sync_job", "warning"]
        read_only_fields = fields
