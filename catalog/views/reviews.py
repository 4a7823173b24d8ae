"""The Reviews pages: tool definitions waiting for a curator, each with the
pinned and the proposed definition side by side, the screening rules it matched
explained, and the decision (``catalog.services.pinning``, audited there).

Read by people who see whole catalogs (curators, compliance, admins; others get
the styled 403); decided by curators and admins.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST, require_safe

from catalog.choices import ReviewKind, ReviewState
from catalog.models import ToolReview
from catalog.navigation import visible_catalogs
from catalog.pinning import diff_rows
from catalog.services import pinning
from catalog.services.tools import MAX_REASON_CHARS
from config.exceptions import Conflict
from config.htmx import is_htmx_partial
from config.http import request_id
from config.pages import acting_user, paginate, render_page
from config.ratelimit import rate_limited
from identity.access import access_for
from screening.rules import RULES, explain

DECISIONS = {
    "approve": pinning.approve_change,
    "allow": pinning.allow_flagged,
    "refuse": pinning.refuse_change,
}
SHOWN = ("pending", "decided")


def _require_reader(request: HttpRequest) -> None:
    if not access_for(request.user).sees_whole_catalog:
        raise PermissionDenied(pinning.READERS)


@require_safe
@login_required
def review_list(request: HttpRequest) -> HttpResponse:
    """Waiting reviews (oldest first: first come, first decided), or decided ones
    (newest first), in one catalog or all the reader may see."""
    _require_reader(request)
    shown = request.GET.get("state", "pending")
    shown = shown if shown in SHOWN else "pending"
    reviews = ToolReview.objects.visible_to(request.user).select_related("catalog")
    slug = request.GET.get("catalog", "")
    if slug:
        reviews = reviews.filter(catalog__slug=slug)
    if shown == "pending":
        reviews = reviews.filter(state=ReviewState.PENDING).order_by("id")
    else:
        reviews = reviews.exclude(state=ReviewState.PENDING).order_by("-decided", "-id")
    context = {
        "page": paginate(request, reviews),
        "shown": shown,
        "catalog_slug": slug,
        "catalogs": visible_catalogs(request),
        "waiting": ToolReview.objects.visible_to(request.user).waiting().count(),
    }
    return render_page(
        request,
        "catalog/review_list.html",
        context,
        partial="catalog/partials/review_table.html",
    )


@require_safe
@login_required
def review_detail(request: HttpRequest, review_id: int) -> HttpResponse:
    _require_reader(request)
    review = pinning.get_review_for_user(request.user, review_id)
    return _detail(request, review)


@login_required
@require_POST
@rate_limited
def review_decide(request: HttpRequest, review_id: int, decision: str) -> Any:
    """Approve, allow or refuse with the form's reason; the decision card (htmx)
    or the page again, with what happened or why not."""
    if decision not in DECISIONS:
        raise Http404("decision: approve, allow or refuse")
    _require_reader(request)
    review = pinning.get_review_for_user(request.user, review_id)
    try:
        review = DECISIONS[decision](
            review,
            actor=acting_user(request),
            reason=request.POST.get("reason", ""),
            request_id=request_id(request),
        )
    except (ValidationError, Conflict, PermissionDenied) as exc:
        status = 409 if isinstance(exc, Conflict) else 400
        if isinstance(exc, PermissionDenied):
            status = 403
        return _detail(request, review, error=_message(exc), status=status)
    done = f"{review.tool_name}: {review.get_state_display().lower()}."
    if is_htmx_partial(request):
        return _detail(request, review, notice=done)
    messages.success(request, done)
    return redirect("console:review-detail", review_id=review.pk)


def _message(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(text for texts in exc.message_dict.values() for text in texts)
    return str(exc.args[0]) if exc.args else str(exc)


def _detail(
    request: HttpRequest,
    review: ToolReview,
    *,
    error: str = "",
    notice: str = "",
    status: int = 200,
) -> HttpResponse:
    rows = diff_rows(review.served, review.proposed)
    context = {
        "review": review,
        "rows": rows,
        "changed": sum(1 for row in rows if row["changed"]),
        "findings": [
            {
                **finding,
                "title": _title(finding["rule"]),
                "why": explain(finding["rule"]),
            }
            for finding in review.findings
        ],
        "flagged": bool(review.findings),
        "is_change": review.kind == ReviewKind.CHANGE,
        "may_decide": access_for(request.user).can_write
        and review.state == ReviewState.PENDING,
        "max_reason": MAX_REASON_CHARS,
        "error": error,
        "notice": notice,
    }
    partial = is_htmx_partial(request)
    return render_page(
        request,
        "catalog/review_detail.html",
        context,
        partial="catalog/partials/review_decision.html",
        status=200 if partial else status,
    )


def _title(rule: str) -> str:
    found = RULES.get(rule)
    return found.title if found is not None else rule
