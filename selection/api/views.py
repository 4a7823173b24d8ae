"""POST /api/v1/select and /select/batch; the per-catalog selection settings."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import generics, permissions, status
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from catalog.api.views import get_catalog_for_user, request_id
from catalog.auth import CuratorWrites, caller_roles
from config.api_errors import first_message
from selection import services
from selection.api import serializers as s
from selection.engine.types import SelectionRequest
from selection.settings_services import current_settings, update_selection_settings
from selection.validation import find_tool, validate_tool_call

LIST_FIELDS = (
    "categories",
    "allow_tools",
    "block_tools",
    "require_capabilities",
)


def build_request(user: Any, data: dict[str, Any]) -> SelectionRequest:
    """The engine request for validated input; roles may only narrow the caller's."""
    allowed = caller_roles(user)
    asked = data.get("roles")
    if asked is not None and allowed is not None and not set(asked) <= set(allowed):
        extra = sorted(set(asked) - set(allowed))[0]
        raise PermissionDenied(f"roles: {extra!r} is not one of the caller's roles")
    roles = tuple(asked) if asked is not None else allowed
    options = {k: tuple(data[k]) for k in LIST_FIELDS if k in data}
    return SelectionRequest(
        query=data.get("query"),
        messages=data.get("messages") or None,
        max_candidates=data["max_candidates"],
        min_score=data["min_score"],
        scorer=data.get("scorer"),
        allow_unsafe=data["allow_unsafe"],
        roles=roles,
        max_cost_per_call=data.get("max_cost_per_call"),
        max_total_tokens=data.get("max_total_tokens"),
        recent_tools=tuple(data.get("recent_tools", ())),
        explain=data["explain"],
        timeout_ms=data.get("timeout_ms"),
        **options,
    )


def answer_for(request: Request, data: dict[str, Any]) -> dict[str, Any]:
    catalog = get_catalog_for_user(request, data["catalog"])
    return services.select_tools(
        catalog,
        build_request(request.user, data),
        fmt=data["format"],
        actor=request.user,
        request_id=request_id(request),
    )


class SelectView(generics.GenericAPIView):
    """Which few tools should the model see for this request?"""

    serializer_class = s.SelectInputSerializer
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(request=s.SelectInputSerializer, responses=s.SelectOutputSerializer)
    def post(self, request: Request) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return Response(answer_for(request, dict(serializer.validated_data)))


class SelectBatchView(generics.GenericAPIView):
    """Up to 100 selections in one call; results in the order of the requests."""

    serializer_class = s.SelectBatchSerializer
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(
        request=s.SelectBatchSerializer, responses=s.SelectBatchOutputSerializer
    )
    def post(self, request: Request) -> Response:
        envelope = self.get_serializer(data=request.data)
        envelope.is_valid(raise_exception=True)
        results = [
            self._one(request, index, item)
            for index, item in enumerate(envelope.validated_data["requests"])
        ]
        return Response({"results": results})

    def _one(self, request: Request, index: int, item: Any) -> dict[str, Any]:
        serializer = s.SelectInputSerializer(data=item)
        if not serializer.is_valid():
            fields = serializer.errors
            detail = f"requests[{index}].{first_message(fields)}"
            return {"error": "invalid", "detail": detail, "fields": fields}
        try:
            return answer_for(request, dict(serializer.validated_data))
        except PermissionDenied as exc:
            return {"error": "permission_denied", "detail": str(exc.detail)}
        except NotFound as exc:
            return {"error": "not_found", "detail": f"requests[{index}].{exc.detail}"}


class SelectionSettingsView(generics.GenericAPIView):
    """GET or PUT a catalog's selection settings (curators and admins write)."""

    serializer_class = s.SelectionSettingsSerializer
    permission_classes = [CuratorWrites]

    def get(self, request: Request, slug: str) -> Response:
        catalog = get_catalog_for_user(request, slug)
        data, version = current_settings(catalog)
        return Response({"settings": data, "version": version})

    def put(self, request: Request, slug: str) -> Response:
        catalog = get_catalog_for_user(request, slug)
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data, version = update_selection_settings(
            catalog, serializer.validated_data["settings"], actor=request.user
        )
        return Response(
            {"settings": data, "version": version}, status=status.HTTP_200_OK
        )


class ValidateCallView(generics.GenericAPIView):
    """Check a model's tool call against the tool's canonical schema."""

    serializer_class = s.ValidateInputSerializer
    permission_classes = [permissions.IsAuthenticated]

    def post(self, request: Request) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        catalog = get_catalog_for_user(request, data["catalog"])
        tool = find_tool(catalog, data["tool"])
        if tool is None:
            raise NotFound(f"tool: no tool {data['tool']!r} in {catalog.slug!r}")
        answer = validate_tool_call(
            catalog,
            tool,
            data["arguments"],
            actor=request.user,
            request_id=request_id(request),
        )
        return Response(answer)
