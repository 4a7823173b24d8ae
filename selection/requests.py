"""Turning validated /select input into the engine's request, within the caller's
access: a request can only narrow what its caller may see, never widen it."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied

from identity.access import Access
from selection.engine.types import SelectionRequest

LIST_FIELDS = (
    "categories",
    "allow_tools",
    "block_tools",
    "require_capabilities",
)


def build_request(access: Access, data: dict[str, Any]) -> SelectionRequest:
    """The engine request for validated input (see SelectInputSerializer).

    Asking for roles the caller lacks, or for unsafe tools without the permission,
    is refused with 403 naming the field (documented in docs/reference/selection.md)."""
    roles = _narrowed_roles(access, data.get("roles"))
    if data.get("allow_unsafe") and not access.allow_unsafe:
        raise PermissionDenied(
            "allow_unsafe: this caller may not be offered unsafe tools "
            "(an admin grants it on the API client or the person's group)"
        )
    whole = access.sees_whole_catalog
    options = {k: tuple(data[k]) for k in LIST_FIELDS if k in data}
    return SelectionRequest(
        query=data.get("query"),
        messages=data.get("messages") or None,
        max_candidates=data["max_candidates"],
        min_score=data["min_score"],
        scorer=data.get("scorer"),
        allow_unsafe=bool(data.get("allow_unsafe")),
        roles=roles,
        max_cost_per_call=data.get("max_cost_per_call"),
        max_total_tokens=data.get("max_total_tokens"),
        recent_tools=tuple(data.get("recent_tools", ())),
        explain=data["explain"],
        timeout_ms=data.get("timeout_ms"),
        visible_roles=None if whole else access.roles,
        visible_unsafe=whole or access.allow_unsafe,
        visible_held=whole,
        **options,
    )


def _narrowed_roles(access: Access, asked: list[str] | None) -> tuple[str, ...] | None:
    allowed = access.roles
    if asked is None:
        return allowed
    if allowed is not None and not set(asked) <= set(allowed):
        extra = sorted(set(asked) - set(allowed))[0]
        raise PermissionDenied(f"roles: {extra!r} is not one of the caller's roles")
    return tuple(asked)
