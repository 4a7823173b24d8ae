"""The sign-in settings API's bodies: a mapping, its input, the password switch."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from config.strict import StrictFieldsMixin
from sso.models import ClaimMapping
from sso.people import ALL_CATALOGS, MAX_CATALOGS, CatalogsField


class MappingCatalogsField(CatalogsField):
    """A mapping's catalogs, its refusals worded as one rule."""

    not_a_list = empty = f"catalogs: a list of 1 to {MAX_CATALOGS} slugs, or '*'"


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
    catalogs = MappingCatalogsField()


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
