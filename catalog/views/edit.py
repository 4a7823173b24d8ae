"""Creating and editing tools, and the schema check the form runs as you type."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from catalog import services
from catalog.choices import ImportOutcome
from catalog.forms import ToolForm, draft_schema_problems
from catalog.services import jobs
from catalog.services.catalogs import DEFAULT_CATALOG
from catalog.views.common import get_tool_for_user, writer_required
from config.http import request_id
from config.pages import acting_user, render_page, visible_catalogs
from config.ratelimit import rate_limited

FORM_TEMPLATE = "catalog/tool_form.html"


@writer_required
@rate_limited
def tool_create(request: HttpRequest) -> HttpResponse:
    """A new tool through create_tool; a refusal re-renders what was typed."""
    catalogs = visible_catalogs(request)
    if request.method != "POST":
        initial = {"catalog": request.GET.get("catalog") or DEFAULT_CATALOG}
        form = ToolForm(initial=initial, catalogs=catalogs)
        return render_page(request, FORM_TEMPLATE, {"form": form})
    form = ToolForm(request.POST, catalogs=catalogs)
    if form.is_valid():
        try:
            with jobs.watch_enqueues() as watch:
                tool = services.create_tool(
                    form.cleaned_data["catalog"],
                    form.to_spec(),
                    actor=acting_user(request),
                    request_id=request_id(request),
                )
        except (ValidationError, services.ToolConflict) as exc:
            form.add_service_error(exc)
        else:
            messages.success(request, f"Created {tool.name}.")
            if watch.warning:
                messages.warning(request, f"Its embedding is delayed: {watch.warning}.")
            return redirect("console:tool-detail", tool_id=tool.pk)
    return render_page(request, FORM_TEMPLATE, {"form": form})


@writer_required
@rate_limited
def tool_edit(request: HttpRequest, tool_id: int) -> HttpResponse:
    """Replace a tool's definition through update_tool (a new version)."""
    tool = get_tool_for_user(request, tool_id)
    if request.method != "POST":
        form = ToolForm(initial=ToolForm.initial_for(services.tool_to_spec(tool)))
        return render_page(request, FORM_TEMPLATE, {"form": form, "tool": tool})
    form = ToolForm(request.POST)
    if form.is_valid():
        try:
            with jobs.watch_enqueues() as watch:
                result = services.update_tool(
                    tool,
                    form.to_spec(),
                    actor=acting_user(request),
                    request_id=request_id(request),
                )
        except (ValidationError, services.ToolConflict) as exc:
            form.add_service_error(exc)
        else:
            if watch.warning:
                messages.warning(request, f"Its embedding is delayed: {watch.warning}.")
            saved = result.tool or tool
            if result.outcome == ImportOutcome.UNCHANGED:
                messages.info(request, "Nothing changed; no new version.")
            else:
                messages.success(request, f"Saved version {saved.version}.")
            return redirect("console:tool-detail", tool_id=tool.pk)
    return render_page(request, FORM_TEMPLATE, {"form": form, "tool": tool})


@require_POST
@login_required
def validate_schema(request: HttpRequest) -> HttpResponse:
    """The schema policy's verdict on the form as typed so far (a fragment)."""
    problems = draft_schema_problems(request.POST)
    return render(request, "catalog/partials/schema_check.html", {"problems": problems})
