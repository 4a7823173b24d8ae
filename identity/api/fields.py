"""The API's field for the catalogs a grant reaches: a key's, a sign-in mapping's."""

from __future__ import annotations

import re
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from identity.access import ALL_CATALOGS

SLUG = re.compile(r"^[-a-zA-Z0-9_]{1,50}$")
MAX_CATALOGS = 1000


@extend_schema_field(OpenApiTypes.ANY)
class CatalogsField(serializers.Field):
    """A list of catalog slugs, or "*" for every catalog; never an empty list.
    A subclass may word its refusals of a non-list and of an empty list."""

    not_a_list = f"catalogs: a list of at most {MAX_CATALOGS} slugs, or '*'"
    empty = "catalogs: name at least one catalog, or '*' for every catalog"

    def to_internal_value(self, data: Any) -> str | list[str]:
        if data == ALL_CATALOGS:
            return ALL_CATALOGS
        if not isinstance(data, list) or len(data) > MAX_CATALOGS:
            raise serializers.ValidationError(self.not_a_list)
        if not data:
            raise serializers.ValidationError(self.empty)
        for slug in data:
            if not isinstance(slug, str) or not SLUG.match(slug):
                raise serializers.ValidationError(
                    f"catalogs: {str(slug)[:60]!r} is not a catalog slug"
                )
        return list(data)

    def to_representation(self, value: Any) -> Any:
        return value
