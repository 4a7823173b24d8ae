"""The compliance console: the audit list, one event's page, verify and export.

Compliance and admins only (a styled 403 for everyone else); catalog scoping comes
from ``AuditEvent.objects.visible_to``, as in the API.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Q
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
)
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404
from django.utils.http import urlencode
from django.views.decorators.http import require_http_methods, require_safe

from audit.changes import before_after, field_changes
from audit.choices import EventType
from audit.export import FORMATS, stream_export
from audit.filters import EXPORTING, AuditFilterForm, FilterError, filter_events
from audit.models import AuditEvent
from audit.querysets import AuditEventQuerySet
from audit.services import seal_pending, verify_chain
from audit.verify import WEB_DEADLINE_S, VerifyTooSlow
from audit.verify_scope import check_for, last_check_for
from catalog.diffs import diff_lines
from catalog.models import Tool
from catalog.navigation import visible_catalogs
from compliance import charts, display, last_verify
from compliance.dashboard import DashboardForm, reason_words
from compliance.dashboard_rollup import summary_dashboard
from compliance.paging import CappedPaginator, ListTooSlow, time_limit
from compliance.tool_versions import change_links
from config.pages import PAGE_SIZE, render_page
from config.params import PageForm
from identity.access import access_for
from selection.services.settings import settings_in_full
from selection.services.why_not import why_not

View = Callable[..., HttpResponseBase]
# An approval's steps (request, decision, use) fall within a day of each other
# (approvals expire within QUIVER_APPROVAL_TTL_SECONDS): bounds the index scan.
APPROVAL_LOOKBACK = timedelta(days=2)


def auditor_required(view: View) -> View:
    """Signed in (else the login page) with the compliance or admin scope (else
    403)."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not access_for(request.user).can_audit:
            raise PermissionDenied("the audit log needs the compliance or admin group")
        return view(request, *args, **kwargs)

    return login_required(wrapped)


def _visible(request: HttpRequest) -> AuditEventQuerySet:
    return AuditEvent.objects.visible_to(access_for(request.user))


def _filters(request: HttpRequest) -> AuditFilterForm:
    catalogs = [catalog.slug for catalog in visible_catalogs(request)]
    form = AuditFilterForm(request.GET, catalogs=catalogs)
    form.is_valid()
    return form


@require_safe
@auditor_required
def event_list(request: HttpRequest) -> HttpResponse:
    """Events newest first; htmx gets only the results and the pager."""
    seal_pending(wait=False)
    filters = _filters(request)
    pager = PageForm(request.GET)
    number = pager.number()
    filters.errors.update(pager.errors)
    events = filters.apply(_visible(request)).order_by("-id")
    context: dict[str, Any] = {"filters": filters, "page": None, "rows": []}
    try:
        with time_limit():
            page = CappedPaginator(events, PAGE_SIZE).get_page(number)
            rows = [{"event": e, "line": display.describe(e)} for e in page]
        context |= {"page": page, "rows": rows}
    except ListTooSlow as exc:
        context["too_slow"] = exc.detail
    return render_page(
        request,
        "audit/event_list.html",
        context,
        partial="audit/partials/event_table.html",
    )


@require_safe
@auditor_required
def event_detail(request: HttpRequest, event_id: int) -> HttpResponse:
    """A selection's page, a validation's page, or a change's page with its diff."""
    event = get_object_or_404(_visible(request), pk=event_id)
    context: dict[str, Any] = {"event": event, "line": display.describe(event)}
    if event.event_type == EventType.SELECTION:
        context |= _selection_context(request, event)
        return render_page(request, "audit/selection_detail.html", context)
    if event.event_type == EventType.VALIDATION:
        context |= _validation_context(request, event)
        return render_page(request, "audit/validation_detail.html", context)
    if event.event_type in {EventType.TOOL_CALL, EventType.APPROVAL}:
        context |= _call_context(request, event)
        return render_page(request, "audit/call_detail.html", context)
    context |= _change_context(event)
    return render_page(request, "audit/change_detail.html", context)


def _selection_context(request: HttpRequest, event: AuditEvent) -> dict[str, Any]:
    request_data = (event.input or {}).get("request") or {}
    output = event.output or {}
    messages = request_data.get("messages") or []
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    sid = str(event.selection_id) if event.selection_id else None
    validations = calls = _visible(request).none()
    if sid:
        validations = _visible(request).validations_of(sid)
        # A call comes after its selection: the (event_type, created) index.
        calls = _visible(request).calls_of(sid).filter(created__gte=event.created)
    return {
        "request": request_data,
        "messages": messages,
        "latest_user_turn": users[-1] if users else None,
        "query": display.query_text(event),
        "picks": [
            {"tool": tool, "bars": display.signal_bars(tool)}
            for tool in output.get("tools") or []
        ],
        "stats": output.get("stats") or {},
        "account": display.exclusion_account(output),
        "explained": "excluded" in output,
        # Suggestions only (any name may be typed): the catalog's current tools,
        # one query, not a replay of its whole change history on every view.
        "catalog_tool_names": Tool.objects.filter(catalog__slug=event.catalog_slug)
        .order_by("name")
        .values_list("name", flat=True)[:2000],
        "validations": [
            {"event": v, "line": display.describe(v)} for v in validations[:50]
        ],
        "calls": [
            {
                "event": c,
                "outcome": (c.output or {}).get("outcome", ""),
                "line": display.describe(c),
            }
            for c in calls.order_by("-id")[:50]
        ],
    }


def _validation_context(request: HttpRequest, event: AuditEvent) -> dict[str, Any]:
    sid = (event.input or {}).get("selection_id") or (event.output or {}).get(
        "selection_id"
    )
    selection = _visible(request).filter(selection_id=sid).first() if sid else None
    return {
        "calls": (event.output or {}).get("calls"),
        "selection": selection,
    }


def _call_context(request: HttpRequest, event: AuditEvent) -> dict[str, Any]:
    """A tool call or an approval step: what was asked and what came of it, with
    the selection that offered the tool and the other steps of the call (its
    start and outcome, by ``call_id``) and of its approval."""
    asked = event.input or {}
    sid = asked.get("selection_id")
    selection = _visible(request).filter(selection_id=sid).first() if sid else None
    approval_id = asked.get("approval_id")
    steps = _visible(request).none()
    if approval_id:
        link = {"approval_id": str(approval_id)}
        steps = _visible(request).filter(
            event_type__in=[EventType.TOOL_CALL, EventType.APPROVAL],
            input__contains=link,
            created__gte=event.created - APPROVAL_LOOKBACK,
        )
    elif event.event_type == EventType.TOOL_CALL:
        call_id = asked.get("call_id") or event.pk
        steps = _visible(request).filter(
            Q(pk=call_id) | Q(input__contains={"call_id": call_id}),
            event_type=EventType.TOOL_CALL,
            created__gte=event.created - APPROVAL_LOOKBACK,
        )
    return {
        "asked": json.dumps(asked, indent=2, sort_keys=True, ensure_ascii=False),
        "result": json.dumps(
            event.output or {}, indent=2, sort_keys=True, ensure_ascii=False
        ),
        "selection": selection,
        "approval_id": approval_id,
        "steps": [
            {"event": e, "line": display.describe(e)}
            for e in steps.exclude(pk=event.pk).order_by("id")[:20]
        ],
    }


def _change_context(event: AuditEvent) -> dict[str, Any]:
    before, after = before_after(event)
    if event.event_type == EventType.SETTINGS:
        before, after = settings_in_full(before), settings_in_full(after)
    return {
        "before": before,
        "after": after,
        "fields": field_changes(before, after),
        "lines": diff_lines(before, after, "before", "after"),
        "versions": change_links(event),
    }


@require_safe
@auditor_required
def why_not_box(request: HttpRequest, event_id: int) -> HttpResponse:
    """The answer to "why not this tool?" for a recorded selection (a fragment)."""
    event = get_object_or_404(
        _visible(request), pk=event_id, event_type=EventType.SELECTION
    )
    tool = request.GET.get("tool", "").strip()
    context: dict[str, Any] = {"event": event, "answer": None, "error": ""}
    if tool:
        context["answer"] = why_not(event, tool)
    else:
        context["error"] = "Name a tool of the catalog."
    return render_page(request, "audit/partials/why_not.html", context)


def _verify_context(request: HttpRequest) -> dict[str, Any]:
    """The chain check's result as the reader may see it (audit.verify_scope),
    or what stopped it (a 60 s worker timeout must never be what ends a check:
    it stops at ``WEB_DEADLINE_S``); either is kept as the page's last check."""
    by = request.user.get_username()
    try:
        check = verify_chain(workers=2, deadline_s=WEB_DEADLINE_S)
    except VerifyTooSlow as exc:
        last_verify.remember(None, by=by, stopped=str(exc))
        return {"check": None, "too_slow": str(exc)}
    last_verify.remember(check, by=by)
    shown = check_for(check, access_for(request.user))
    bad = None
    if shown["first_bad_id"] is not None:
        bad = _visible(request).filter(pk=shown["first_bad_id"]).first()
    return {"check": shown, "bad": bad}


@require_http_methods(["GET", "POST"])
@auditor_required
def verify(request: HttpRequest) -> HttpResponse:
    """GET: the page with its button and the last check; POST: seal, run the
    chain check, show it."""
    context: dict[str, Any] = {"check": None}
    if request.method == "POST":
        context = _verify_context(request)
    context["last"] = last_check_for(last_verify.last_check(), access_for(request.user))
    return render_page(
        request,
        "audit/verify.html",
        context,
        partial="audit/partials/verify_result.html",
    )


@require_safe
@auditor_required
def export(request: HttpRequest) -> HttpResponseBase:
    """The current filter as CSV or JSONL, streamed."""
    fmt = request.GET.get("format", "csv")
    if fmt not in FORMATS:
        return HttpResponseBadRequest(f"format: must be one of {', '.join(FORMATS)}")
    try:
        events = filter_events(_visible(request), request.GET, extra=EXPORTING)
    except FilterError as exc:
        return HttpResponseBadRequest(str(exc))
    seal_pending(wait=False)
    return stream_export(events, fmt)


@require_safe
@auditor_required
def dashboard(request: HttpRequest) -> HttpResponse:
    """Selections, picks, exclusions, tool-call checks and latency over a range,
    for the events this reader may see (a bad range is a form error)."""
    catalogs = [catalog.slug for catalog in visible_catalogs(request)]
    form = DashboardForm(request.GET, catalogs=catalogs)
    context: dict[str, Any] = {"form": form, "board": None}
    if form.is_valid():
        chosen = form.cleaned_data["catalog"]
        # The reader's catalogs (the form allows only those), or every catalog
        # for a reader limited to none (events of no catalog included).
        reading = [chosen] if chosen else access_for(request.user).catalogs
        board = summary_dashboard(reading, form.window())
        since, until = board.window.days
        catalog = form.cleaned_data["catalog"]
        scope = {"since": since, "until": until, "catalog": catalog}
        context |= {
            "board": board,
            # The audit list's filters for the same days and catalog (its links).
            "scope": urlencode({k: v for k, v in scope.items() if v}),
            "timeline": charts.column_chart(board.buckets),
            "picked": charts.bars(board.picked),
            "excluded": charts.bars(board.excluded),
            "reasons": charts.bars(board.reasons, reason_words),
        }
    return render_page(
        request,
        "audit/dashboard.html",
        context,
        partial="audit/partials/dashboard_body.html",
    )
