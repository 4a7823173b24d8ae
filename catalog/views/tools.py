"""The tool list, a tool's page, and its status and delete actions."""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    StreamingHttpResponse,
)
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from catalog import services
from catalog.bulk_forms import BulkEditForm
from catalog.choices import EmbeddingStatus, ToolStatus
from catalog.first_steps import dismiss_first_steps, first_steps
from catalog.formats import FORMATS, export_tool
from catalog.forms import ToolFilterForm
from catalog.models import Catalog, Tool
from catalog.navigation import visible_catalogs
from catalog.querysets import ToolQuerySet, known_roles
from catalog.services import holds
from catalog.tool_csv import csv_response
from catalog.views.common import get_tool_for_user, writer_required
from catalog.views.history import history_context
from config.exceptions import Conflict
from config.htmx import is_htmx_partial
from config.http import request_id
from config.pages import acting_user, render_page
from config.ratelimit import rate_limited
from identity.access import access_for

# Columns the list never shows; big JSON stays in the database.
LIST_DEFERRED = ("parameters", "annotations", "examples", "keywords", "description")
# The sortable columns: (label, TOOL_ORDERINGS key).
SORTABLE = {
    "name": "Name",
    "catalog": "Catalog",
    "category": "Category",
    "status": "Status",
    "safety": "Safety",
    "cost": "Cost / call",
    "embedding": "Embedding",
    "updated_at": "Last changed",
}
STATUS_ACTIONS = [
    (ToolStatus.ACTIVE, "Activate"),
    (ToolStatus.DISABLED, "Disable"),
    (ToolStatus.DEPRECATED, "Deprecate"),
]


def _listed(
    request: HttpRequest,
) -> tuple[ToolFilterForm, ToolQuerySet, list[Catalog]]:
    """The list's filter form, the tools it selects sorted as asked, and the
    catalogs the reader sees."""
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
    if filters.sort_key:
        return filters, tools.sorted_by(filters.sort_key), catalogs
    return filters, tools.order_by("catalog__slug", "name"), catalogs


def sort_columns(current: str) -> dict[str, dict[str, str]]:
    """Each sortable column's label, its state (asc, desc or "") and the sort a
    click on its header asks for (ascending first, then descending)."""
    columns = {}
    for key, label in SORTABLE.items():
        state = {key: "asc", f"-{key}": "desc"}.get(current, "")
        columns[key] = {
            "label": label,
            "state": state,
            "next": f"-{key}" if state == "asc" else key,
        }
    return columns


@require_safe
@login_required
def tool_list(request: HttpRequest) -> HttpResponse:
    """Search, filter, sort and page tools; curators tick rows for a bulk edit.
    htmx gets only the table, pager and counters."""
    filters, tools, catalogs = _listed(request)
    page = Paginator(
        tools.select_related("catalog").defer(*LIST_DEFERRED), filters.page_size
    ).get_page(request.GET.get("page"))
    embedding = tools.order_by().aggregate(
        pending=Count("pk", filter=Q(embedding_status=EmbeddingStatus.PENDING)),
        failed=Count("pk", filter=Q(embedding_status=EmbeddingStatus.FAILED)),
    )
    context = {
        "filters": filters,
        "page": page,
        "embedding": embedding,
        "words_only": _words_only(request),
        "first_steps": None if is_htmx_partial(request) else first_steps(request.user),
        "columns": sort_columns(filters.sort_key),
        "filter_query": filters.filter_query(),
        "nav_catalogs": catalogs,
    }
    if access_for(request.user).can_write:
        roles = known_roles([catalog.pk for catalog in catalogs])
        context["bulk"] = BulkEditForm(roles=roles)
    return render_page(
        request,
        "catalog/tool_list.html",
        context,
        partial="catalog/partials/tool_table.html",
    )


def _words_only(request: HttpRequest) -> list[str]:
    """The visible catalogs whose selections are ranked by words alone until
    their tools are embedded (the whole page only: a filter's fragment keeps
    the notice it came with)."""
    if is_htmx_partial(request):
        return []
    backlog = Catalog.objects.visible_to(request.user).embedding_backlog()
    return [row["catalog"] for row in backlog if row["words_only"]]


@require_POST
@login_required
@rate_limited
def first_steps_dismiss(request: HttpRequest) -> HttpResponse:
    """Close the first steps for good; htmx swaps the panel out."""
    dismiss_first_steps(actor=acting_user(request))
    if is_htmx_partial(request):
        return HttpResponse("")
    return redirect("console:tool-list")


@require_safe
@login_required
def tool_export(request: HttpRequest) -> StreamingHttpResponse:
    """The filtered, sorted list as CSV: only tools the reader may see."""
    _filters, tools, _catalogs = _listed(request)
    return csv_response(tools)


@require_safe
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
        "reviews": list(holds.pending(tool)),
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
    except Conflict as exc:
        error = str(exc)
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
