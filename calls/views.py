"""The Approvals page: tool calls waiting for a person, approved or denied here.

For people with the approval permission (the approver and admin groups; others
get the styled 403). The list refreshes itself (htmx polling the same URL for its
fragment); each decision is a service of calls.decisions, audited there.
"""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.utils import timezone
from django.views.decorators.http import require_POST, require_safe

from audit.models import AuditEvent
from calls.decisions import MAX_REASON, DecisionRefused, approve, deny
from calls.models import Approval, ApprovalStatus
from config.exceptions import Conflict
from config.htmx import is_htmx_partial
from config.http import request_id
from config.pages import acting_user, render_page
from config.ratelimit import rate_limited
from identity.access import (
    APPROVALS_PERMISSION_RULE,
    access_for,
    approvals_visible_to,
    own_requesters,
)

PENDING_SHOWN = 100
RECENT_SHOWN = 25
DECISIONS = {"approve": approve, "deny": deny}


def _require_decider(request: HttpRequest) -> None:
    if not access_for(request.user).decides_approvals:
        raise PermissionDenied(APPROVALS_PERMISSION_RULE)


@require_safe
@login_required
def approval_list(request: HttpRequest) -> HttpResponse:
    """Pending approvals, oldest first, then the latest decided ones; htmx polls
    this URL for the fragment."""
    _require_decider(request)
    return _page(request)


@login_required
@require_POST
@rate_limited
def approval_decide(request: HttpRequest, approval_id: UUID, decision: str) -> Any:
    """Approve or deny one approval with the form's reason."""
    if decision not in DECISIONS:
        raise Http404("decision: approve or deny")
    _require_decider(request)
    visible = approvals_visible_to(request.user, Approval.objects.all())
    approval = get_object_or_404(visible.select_related("catalog"), pk=approval_id)
    try:
        row = DECISIONS[decision](
            approval,
            person=acting_user(request),
            reason=request.POST.get("reason", ""),
            request_id=request_id(request),
        )
    except (ValidationError, Conflict, DecisionRefused) as exc:
        return _page(request, error=_message(exc), status=_status(exc))
    done = f"{row.tool_name}: {row.get_status_display().lower()}."
    if is_htmx_partial(request):
        return _page(request, notice=done)
    messages.success(request, done)
    return redirect("calls:approval-list")


def _message(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(
            f"{field}: {text}"
            for field, texts in exc.message_dict.items()
            for text in texts
        )
    return str(exc.args[0]) if exc.args else str(exc)


def _status(exc: Exception) -> int:
    if isinstance(exc, Conflict):
        return 409
    return 403 if isinstance(exc, DecisionRefused) else 400


def _page(
    request: HttpRequest, *, error: str = "", notice: str = "", status: int = 200
) -> HttpResponse:
    now = timezone.now()
    visible = approvals_visible_to(
        request.user, Approval.objects.select_related("catalog")
    )
    waiting = Q(status=ApprovalStatus.PENDING, expires__gt=now)
    pending = list(visible.filter(waiting).order_by("created", "id")[:PENDING_SHOWN])
    recent = list(visible.exclude(waiting).order_by("-created", "id")[:RECENT_SHOWN])
    context = {
        "pending": _rows(request, pending, now),
        "recent": _rows(request, recent, now),
        "error": error,
        "notice": notice,
        "max_reason": MAX_REASON,
    }
    # htmx swaps only 2xx answers: a refused decision comes back as the fragment
    # with its message; a whole page keeps the real status.
    partial = is_htmx_partial(request)
    return render_page(
        request,
        "calls/approvals.html",
        context,
        partial="calls/partials/approval_lists.html",
        status=200 if partial else status,
    )


def _rows(
    request: HttpRequest, approvals: list[Approval], now: Any
) -> list[dict[str, Any]]:
    """Each approval with its pretty arguments, whether it is the reader's own
    request, and the audit page of the selection that offered the tool."""
    selections: dict[UUID, int] = _selection_pages(request, approvals)
    mine = own_requesters(request.user)
    rows = []
    for approval in approvals:
        rows.append(
            {
                "approval": approval,
                "arguments": json.dumps(
                    approval.arguments, indent=2, sort_keys=True, ensure_ascii=False
                ),
                # By id only (identity.access.is_own_request); a requester
                # since deleted leaves nobody to tell whose it was.
                "own": approval.requested_by_id in mine,
                "orphan": approval.requested_by_id is None,
                "lapsed": approval.status == ApprovalStatus.PENDING
                and approval.expires <= now,
                "selection_event": selections.get(approval.selection_id)
                if approval.selection_id
                else None,
            }
        )
    return rows


def _selection_pages(
    request: HttpRequest, approvals: list[Approval]
) -> dict[UUID, int]:
    """selection id -> its audit event's id, for a reader of the audit log."""
    ids = {a.selection_id for a in approvals if a.selection_id}
    if not ids or not access_for(request.user).can_audit:
        return {}
    reader = access_for(request.user)
    events = AuditEvent.objects.visible_to(reader).filter(selection_id__in=ids)
    return dict(events.values_list("selection_id", "pk"))
