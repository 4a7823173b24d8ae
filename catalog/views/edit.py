"""Creating and editing tools, and the schema check the form runs as you type."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from catalog import services
from catalog.choices import ImportOutcome
from catalog.diffs import diff_lines
from catalog.forms import ToolForm, draft_schema_problems
from catalog.models import Tool
from catalog.navigation import visible_catalogs
from catalog.querysets import known_roles
from catalog.services.catalogs import DEFAULT_CATALOG
from catalog.services.tools import content_hash
from catalog.spec import ToolSpec
from catalog.views.common import get_tool_for_user, writer_required
from config.http import request_id
from config.pages import acting_user, render_page
from config.ratelimit import rate_limited
from jobs import services as jobs

FORM_TEMPLATE = "catalog/tool_form.html"


@require_http_methods(["GET", "HEAD", "POST"])
@writer_required
@rate_limited
def tool_create(request: HttpRequest) -> HttpResponse:
    """A new tool through create_tool; a refusal re-renders what was typed."""
    catalogs = visible_catalogs(request)
    roles = known_roles([catalog.pk for catalog in catalogs])
    if request.method != "POST":
        initial = {"catalog": request.GET.get("catalog") or DEFAULT_CATALOG}
        form = ToolForm(initial=initial, catalogs=catalogs, roles=roles)
        return render_page(request, FORM_TEMPLATE, {"form": form})
    form = ToolForm(request.POST, catalogs=catalogs, roles=roles)
    if form.is_valid():
        try:
            with jobs.watch_enqueues() as watch:
                tool = services.create_tool(
                    form.cleaned_data["catalog"], form.to_spec(), **_by(request, form)
                )
        except (ValidationError, services.ToolConflict) as exc:
            form.add_service_error(exc)
        else:
            messages.success(request, f"Created {tool.name}.")
            if watch.warning:
                messages.warning(request, f"Its embedding is delayed: {watch.warning}.")
            return redirect("console:tool-detail", tool_id=tool.pk)
    return render_page(request, FORM_TEMPLATE, {"form": form})


def _by(request: HttpRequest, form: ToolForm) -> dict[str, Any]:
    """Who saves the form's tool, and why (the write services' keywords)."""
    return {
        "actor": acting_user(request),
        "request_id": request_id(request),
        "reason": form.cleaned_data["reason"],
    }


class _Rollback(Exception):
    """Undoes a preview's trial save."""


def preview_token(tool: Tool, spec: ToolSpec, reason: str) -> str:
    """What the preview showed: this version of the tool, this edit, this reason.
    Saving with another token (the form or the tool changed) previews again."""
    seen = f"{tool.pk}:{tool.version}:{content_hash(spec)}:{spec.provider_name}"
    return hashlib.sha256(f"{seen}:{reason}".encode()).hexdigest()[:32]


def _trial_save(request: HttpRequest, tool: Tool, form: ToolForm) -> bool:
    """Run the save and roll it back: every refusal the save would give lands
    on the form now. True when the save would make a new version."""
    try:
        with transaction.atomic():
            result = services.update_tool(
                tool,
                form.to_spec(),
                actor=acting_user(request),
                reason=form.cleaned_data["reason"],
            )
            raise _Rollback(result.outcome)
    except _Rollback as done:
        return done.args[0] != ImportOutcome.UNCHANGED
    except (ValidationError, services.ToolConflict) as exc:
        form.add_service_error(exc)
        return False


def _preview(request: HttpRequest, tool: Tool, form: ToolForm) -> dict[str, Any]:
    """The diff of the saved version against the edit, and its token."""
    changed = _trial_save(request, tool, form)
    if form.errors:
        return {}
    saved = services.tool_to_spec(tool)
    spec = form.to_spec()
    edited = replace(
        spec,
        cost_per_call=spec.cost_per_call.normalize(),
        provider_name=spec.provider_name or saved.provider_name,
    )
    lines = diff_lines(
        saved.to_dict(), edited.to_dict(), f"v{tool.version} (saved)", "your edit"
    )
    return {
        "preview": lines if changed else [],
        "preview_token": preview_token(tool, spec, form.cleaned_data["reason"]),
        "preview_stale": bool(request.POST.get("confirm")),
    }


@require_http_methods(["GET", "HEAD", "POST"])
@writer_required
@rate_limited
def tool_edit(request: HttpRequest, tool_id: int) -> HttpResponse:
    """Replace a tool's definition through update_tool (a new version), after a
    preview of the diff that the "Save new version" button confirms."""
    tool = get_tool_for_user(request, tool_id)
    initial = ToolForm.initial_for(services.tool_to_spec(tool))
    roles = known_roles([tool.catalog_id])
    if request.method != "POST":
        form = ToolForm(initial=initial, roles=roles)
        return render_page(request, FORM_TEMPLATE, {"form": form, "tool": tool})
    form = ToolForm(request.POST, initial=initial, roles=roles)
    context: dict[str, Any] = {"form": form, "tool": tool}
    if not form.is_valid():
        return render_page(request, FORM_TEMPLATE, context)
    token = preview_token(tool, form.to_spec(), form.cleaned_data["reason"])
    if request.POST.get("confirm") != token:
        context.update(_preview(request, tool, form))
        return render_page(request, FORM_TEMPLATE, context)
    try:
        with jobs.watch_enqueues() as watch:
            result = services.update_tool(tool, form.to_spec(), **_by(request, form))
    except (ValidationError, services.ToolConflict) as exc:
        form.add_service_error(exc)
        return render_page(request, FORM_TEMPLATE, context)
    if watch.warning:
        messages.warning(request, f"Its embedding is delayed: {watch.warning}.")
    if result.outcome == ImportOutcome.UNCHANGED:
        messages.info(request, "Nothing changed; no new version.")
    else:
        messages.success(request, f"Saved version {(result.tool or tool).version}.")
    return redirect("console:tool-detail", tool_id=tool.pk)


@require_POST
@login_required
def validate_schema(request: HttpRequest) -> HttpResponse:
    """The schema policy's verdict on the form as typed so far (a fragment)."""
    problems = draft_schema_problems(request.POST)
    return render(request, "catalog/partials/schema_check.html", {"problems": problems})
