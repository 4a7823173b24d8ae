"""A tool's change history and the diff between two of its versions."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_safe

from catalog.diffs import diff_lines
from catalog.lookups import get_catalog_for_user
from catalog.models import Tool, ToolChange
from catalog.querysets import catalog_changes
from catalog.views.common import get_tool_for_user
from config.pages import paginate, render_page
from identity.access import access_for


def history_context(tool: Tool) -> dict[str, Any]:
    """The tool's change records, newest first, and the pair compared by default
    (the latest change against the one before it)."""
    changes = list(ToolChange.objects.filter(tool=tool).defer("before", "after"))
    newest = changes[0].pk if changes else None
    previous = changes[1].pk if len(changes) > 1 else newest
    return {"tool": tool, "changes": changes, "diff_a": previous, "diff_b": newest}


def version_state(change: ToolChange) -> Any:
    """The tool as it stood right after this change (before it, for a delete)."""
    return change.after if change.after is not None else change.before


@require_safe
@login_required
def tool_history(request: HttpRequest, tool_id: int) -> HttpResponse:
    """Who changed the tool, when, to which version; a page or a fragment."""
    tool = get_tool_for_user(request, tool_id)
    return render_page(
        request,
        "catalog/tool_history.html",
        history_context(tool),
        partial="catalog/partials/tool_history.html",
    )


@require_safe
@login_required
def tool_diff(request: HttpRequest, tool_id: int) -> HttpResponse:
    """``?a=<change id>&b=<change id>``: the older of the two against the newer."""
    tool = get_tool_for_user(request, tool_id)
    try:
        ids = sorted({int(request.GET["a"]), int(request.GET["b"])})
    except (KeyError, ValueError):
        return HttpResponseBadRequest("a, b: two change ids of this tool are required")
    found = {c.pk: c for c in ToolChange.objects.filter(tool=tool, pk__in=ids)}
    if len(found) != len(ids):
        raise Http404("no such change of this tool")
    old, new = found[ids[0]], found[ids[-1]]
    context = {
        "tool": tool,
        "old": old,
        "new": new,
        "lines": diff_lines(
            version_state(old),
            version_state(new),
            f"version {old.version} ({old.get_action_display().lower()})",
            f"version {new.version} ({new.get_action_display().lower()})",
        ),
    }
    return render_page(
        request,
        "catalog/tool_diff.html",
        context,
        partial="catalog/partials/tool_diff.html",
    )


@require_safe
@login_required
def catalog_changes_page(request: HttpRequest, slug: str) -> HttpResponse:
    """The catalog's change log (deleted tools included), one tool's with ?tool=."""
    catalog = get_catalog_for_user(request.user, slug)
    if not access_for(request.user).sees_whole_catalog:
        raise PermissionDenied("the change log needs the curator or compliance scope")
    tool_name = request.GET.get("tool", "")
    page = paginate(request, catalog_changes(catalog, tool_name))
    context = {"catalog": catalog, "page": page, "tool_name": tool_name}
    return render_page(request, "catalog/catalog_changes.html", context)


@require_safe
@login_required
def change_detail(request: HttpRequest, slug: str, change_id: int) -> HttpResponse:
    """One change record: who, when, and its before/after as a diff."""
    catalog = get_catalog_for_user(request.user, slug)
    if not access_for(request.user).sees_whole_catalog:
        raise PermissionDenied("the change log needs the curator or compliance scope")
    change = get_object_or_404(ToolChange, pk=change_id, catalog=catalog)
    lines = diff_lines(
        change.before, change.after, "before", f"after (v{change.version})"
    )
    context = {"catalog": catalog, "change": change, "lines": lines}
    return render_page(request, "catalog/change_detail.html", context)
