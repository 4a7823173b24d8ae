"""The sign-in settings API's bodies: a mapping, its input, the password switch."""

from __future__ import annotations

import re
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from config.strict import StrictFieldsMixin
from sso.models import ClaimMapping

ALL_CATALOGS = "*"
SLUG = re.compile(r"^[-a-zA-Z0-9_]{1,50}$")
MAX_ITEMS = 1000


@extend_schema_field(OpenApiTypes.ANY)
class CatalogsField(serializers.Field):
    """A list of catalog slugs, or "*" for every catalog; never an empty list."""

    def to_internal_value(self, data: Any) -> str | list[str]:
        if data == ALL_CATALOGS:
            return ALL_CATALOGS
        if not isinstance(data, list) or not data or len(data) > MAX_ITEMS:
            raise serializers.ValidationError(
                f"catalogs: a list of 1 to {MAX_ITEMS} slugs, or '*'"
            )
        for slug in data:
            if not isinstance(slug, str) or not SLUG.match(slug):
                raise serializers.ValidationError(
                    f"catalogs: {str(slug)[:60]!r} is not a catalog slug"
                )
        return list(data)

    def to_representation(self, value: Any) -> Any:
        return value


class ClaimMappingSerializer(serializers.ModelSerializer):
    groups = serializers.SerializerMethodField()
    catalogs = serializers.SerializerMethodField()

    class Meta:
        model = ClaimMapping
        fields = ["id", "value", "groups", "catalogs", "created", "updated"]
        read_only_fields = fields

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_groups(self, mapping: ClaimMapping) -> list[str]:
        return sorted(group.name for group in mapping.groups.all())

    @extend_schema_field(OpenApiTypes.ANY)
    def get_catalogs(self, mapping: ClaimMapping) -> Any:
        return ALL_CATALOGS if mapping.catalogs is None else list(mapping.catalogs)


class MappingChangeSerializer(StrictFieldsMixin, serializers.Serializer):
    groups = serializers.ListField(
        child=serializers.CharField(max_length=150), max_length=100
    )
    catalogs = CatalogsField()


class MappingInputSerializer(MappingChangeSerializer):
    value = serializers.CharField(max_length=255, trim_whitespace=False)

    def validate_value(self, value: str) -> str:
        if not value or value != value.strip():
            raise serializers.ValidationError("value: no spaces at either end")
        return value


class SignInPolicySerializer(StrictFieldsMixin, serializers.Serializer):
    password_login = serializers.BooleanField(
        help_text="The console's switch (false: passwords only for the break-glass "
        "admin)"
    )
    password_login_effective = serializers.BooleanField(read_only=True)
    sso = serializers.BooleanField(read_only=True)
