"""Write bodies name every field they take: a field a serializer does not know is
a 400 naming it, not silently dropped (a caller who misspells ``block_tools``
would otherwise believe a tool was blocked)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework import serializers

UNKNOWN_FIELD_RULE = "is not a field of this body"
FORM_FIELDS = frozenset({"csrfmiddlewaretoken"})


class StrictFieldsMixin(serializers.Serializer):
    """Put first in a write serializer's bases: any key of the body that is not
    one of its writable or read-only fields is refused, each named."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            # A form post (the browsable API) carries its CSRF token as a field.
            ignored = FORM_FIELDS if hasattr(data, "getlist") else frozenset()
            unknown = sorted(set(data) - set(self.fields) - ignored, key=str)
            if unknown:
                raise serializers.ValidationError(
                    {str(name): [UNKNOWN_FIELD_RULE] for name in unknown}
                )
        return super().to_internal_value(data)
