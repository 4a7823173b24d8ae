"""The tool list, a tool's page, and its status and delete actions."""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from catalog import services
from catalog.choices import EmbeddingStatus, ToolStatus
from catalog.formats import FORMATS, export_tool
from catalog.forms import ToolFilterForm
from catalog.models import Tool
from catalog.views.common import get_tool_for_user, writer_required
from catalog.views.history import history_context
from config.htmx import is_htmx_partial
from config.http import request_id
from config.pages import acting_user, paginate, render_page, visible_catalogs
from config.ratelimit import rate_limited

# Columns the list never shows; big JSON stays in the database.
LIST_DEFERRED = ("parameters", "annotations", "examples", "keywords", "description")
STATUS_ACTIONS = [
    (ToolStatus.ACTIVE, "Activate"),
    (ToolStatus.DISABLED, "Disable"),
    (ToolStatus.DEPRECATED, "Deprecate"),
]


@login_required
def tool_list(request: HttpRequest) -> HttpResponse:
    """Search and filter tools; htmx gets only the table, pager and counters."""
    catalogs = list(visible_catalogs(request))
    visible = Tool.objects.visible_to(request.user)
    categories = (
        visible.exclude(category="")
        .order_by("category")
        .values_list("category", flat=True)
        .distinct()
    )
    filters = ToolFilterForm(request.GET, catalogs=catalogs, categories=categories)
    tools = filters.apply(visible)
    page = paginate(
        request,
        tools.select_related("catalog")
        .defer(*LIST_DEFERRED)
        .order_by("catalog__slug", "name"),
    )
    embedding = tools.order_by().aggregate(
        pending=Count("pk", filter=Q(embedding_status=EmbeddingStatus.PENDING)),
        failed=Count("pk", filter=Q(embedding_status=EmbeddingStatus.FAILED)),
    )
    context = {
        "filters": filters,
        "page": page,
        "embedding": embedding,
        "nav_catalogs": catalogs,
    }
    return render_page(
        request,
        "catalog/tool_list.html",
        context,
        partial="catalog/partials/tool_table.html",
    )


@login_required
def tool_detail(request: HttpRequest, tool_id: int) -> HttpResponse:
    """Everything about one tool: metadata, schema, provider previews, history."""
    tool = get_tool_for_user(request, tool_id)
    spec = services.tool_to_spec(tool)
    previews = [
        (fmt, json.dumps(export_tool(spec, fmt), indent=2, ensure_ascii=False))
        for fmt in FORMATS
    ]
    context = {
        "tool": tool,
        "schema_json": json.dumps(tool.parameters, indent=2, ensure_ascii=False),
        "annotations_json": json.dumps(tool.annotations, indent=2, ensure_ascii=False),
        "previews": previews,
        "status_actions": STATUS_ACTIONS,
        **history_context(tool),
    }
    return render_page(request, "catalog/tool_detail.html", context)


@require_POST
@writer_required
@rate_limited
def tool_status(request: HttpRequest, tool_id: int) -> HttpResponse:
    """Activate, disable or deprecate; htmx gets the new status block and history."""
    tool = get_tool_for_user(request, tool_id)
    status = request.POST.get("status", "")
    if status not in ToolStatus.values:
        return HttpResponseBadRequest(f"status: must be one of {ToolStatus.values}")
    error = ""
    try:
        result = services.set_tool_status(
            tool, status, actor=acting_user(request), request_id=request_id(request)
        )
        tool = result.tool or tool
    except ValidationError as exc:
        error = "; ".join(exc.messages)
    if not is_htmx_partial(request):
        if error:
            messages.error(request, error)
        return redirect("console:tool-detail", tool_id=tool.pk)
    context = {
        **history_context(tool),
        "status_actions": STATUS_ACTIONS,
        "status_error": error,
        "can_write": True,
    }
    return render(request, "catalog/partials/tool_status_update.html", context)


@require_POST
@writer_required
@rate_limited
def tool_delete(request: HttpRequest, tool_id: int) -> HttpResponse:
    """Delete after the browser's confirm; the change history stays."""
    tool = get_tool_for_user(request, tool_id)
    services.delete_tool(
        tool, actor=acting_user(request), request_id=request_id(request)
    )
    messages.success(request, f"Deleted {tool.name}; its history is kept.")
    target = reverse("console:tool-list")
    if is_htmx_partial(request):
        return HttpResponse(status=204, headers={"HX-Redirect": target})
    return redirect(target)
