"""The sweeps that hold a plain input path (config.plain_input) to its
serializer: both answers, each leaf's type beside it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rest_framework.exceptions import ValidationError
from rest_framework.serializers import Serializer


def typed(value: Any) -> Any:
    """``value`` with every leaf's type beside it: 0 and 0.0 differ (the audit row
    and the answer cache's key would), as do an error's message and its code."""
    if isinstance(value, dict):
        return {key: typed(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [typed(item) for item in value]
    return (type(value).__name__, value, getattr(value, "code", None))


def serializer_answer(serializer_class: type[Serializer], body: Any) -> tuple[str, Any]:
    """What the serializer makes of ``body``: its validated data or its errors."""
    serializer = serializer_class(data=body)
    if serializer.is_valid():
        return "valid", typed(dict(serializer.validated_data))
    return "invalid", typed(serializer.errors)


def reader_answer(
    reader: Callable[[Any], dict[str, Any]], body: Any
) -> tuple[str, Any]:
    """What the input reader (plain path first) makes of ``body``."""
    try:
        return "valid", typed(reader(body))
    except ValidationError as exc:
        return "invalid", typed(exc.detail)
