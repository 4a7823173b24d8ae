"""Console pages of labels and evaluations: parse, check access (identity.access),
call one service, render."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import (
    require_http_methods,
    require_POST,
    require_safe,
)

from catalog.lookups import get_labels_catalog
from catalog.models import Catalog
from config import jsonparse
from config.exceptions import LimitReached
from config.http import request_id
from config.pages import acting_user, paginate, render_page
from config.params import MAX_ID, whole_number
from config.ratelimit import rate_limited
from identity.access import access_for, may_manage_labels
from learning.charts import run_chart
from learning.confusable import confusable_pairs
from learning.models import Evaluation, EvaluationState, LabelOrigin, LabelStatus
from learning.services import evaluations, labels, proposals
from learning.services.limits import RETRY_AFTER_S
from learning.uploads import UploadError, read_label_file
from selection.registry import EvaluationInputError

METRICS = ("NDCG@10", "R@1", "R@3", "R@10", "MRR", "no_tool_fp_rate", "no_tool_recall")
MISSES_SHOWN = 50


def _catalog(request: HttpRequest, slug: str, *, manage: bool = False) -> Catalog:
    return get_labels_catalog(request.user, slug, manage=manage)


def _choice(request: HttpRequest, name: str, choices: list[str]) -> str:
    value = request.GET.get(name, "") or request.POST.get(name, "")
    return value if value in choices else ""


def _labels_context(request: HttpRequest, catalog: Catalog) -> dict[str, Any]:
    status = _choice(request, "status", LabelStatus.values)
    origin = _choice(request, "origin", LabelOrigin.values)
    counts = {s: catalog.labels.filter(status=s).count() for s in LabelStatus.values}
    return {
        "catalog": catalog,
        "current": "catalog-labels",
        "page": paginate(
            request, labels.labels_of(catalog, status=status, origin=origin)
        ),
        "status": status,
        "origin": origin,
        "counts": counts,
        "statuses": LabelStatus.choices,
        "origins": LabelOrigin.choices,
        "can_manage": may_manage_labels(access_for(request.user), catalog.slug),
    }


@require_safe
@login_required
def label_list(request: HttpRequest, slug: str) -> HttpResponse:
    """The catalog's labels, paged and filtered; the upload form."""
    catalog = _catalog(request, slug)
    return render_page(
        request, "learning/labels.html", _labels_context(request, catalog)
    )


@login_required
@rate_limited
@require_POST
def label_upload(request: HttpRequest, slug: str) -> HttpResponse:
    """A JSONL or CSV file of labels (learning.uploads): the good ones kept, each
    refused one shown with its reason."""
    catalog = _catalog(request, slug, manage=True)
    context = _labels_context(request, catalog)
    upload = request.FILES.get("file")
    if upload is None:
        context["upload_error"] = "file: choose a .jsonl or .csv file"
        return render_page(request, "learning/labels.html", context, status=400)
    try:
        items = read_label_file(upload.name or "", upload.read())
    except UploadError as exc:
        context["upload_error"] = str(exc)
        return render_page(request, "learning/labels.html", context, status=400)
    result = labels.add_labels(
        catalog,
        items,
        actor=acting_user(request),
        channel="console",
        request_id=request_id(request),
    )
    context = _labels_context(request, catalog)
    context["upload"] = result
    return render_page(request, "learning/labels.html", context)


@login_required
@rate_limited
@require_POST
def label_delete(request: HttpRequest, slug: str) -> HttpResponse:
    """One label (``id``), or every label of the filter shown (``scope=all``)."""
    catalog = _catalog(request, slug, manage=True)
    actor = acting_user(request)
    label_id = request.POST.get("id", "")
    if label_id:
        number = whole_number(label_id, MAX_ID) or 0
        deleted = labels.delete_labels(
            catalog,
            actor=actor,
            label_id=min(number, MAX_ID),
            request_id=request_id(request),
        )
    elif request.POST.get("scope") == "all":
        deleted = labels.delete_labels(
            catalog,
            actor=actor,
            status=_choice(request, "status", LabelStatus.values),
            origin=_choice(request, "origin", LabelOrigin.values),
            request_id=request_id(request),
        )
    else:
        raise Http404("id: name a label, or scope=all")
    messages.success(request, f"Deleted {deleted} label(s).")
    return redirect("learning:labels", slug=catalog.slug)


@login_required
@rate_limited
@require_http_methods(["GET", "POST"])
def label_review(request: HttpRequest, slug: str) -> HttpResponse:
    """Labels proposed from use: find more, accept or reject them."""
    catalog = _catalog(request, slug, manage=request.method == "POST")
    if request.method == "POST":
        actor = acting_user(request)
        action = request.POST.get("action", "")
        if action == "find":
            found = proposals.find_proposals(
                catalog, actor=actor, request_id=request_id(request)
            )
            messages.success(request, f"Found {found} new proposal(s).")
        elif action in ("accept", "reject"):
            given = (whole_number(i, MAX_ID) for i in request.POST.getlist("ids"))
            ids = [i for i in given if i is not None]
            decision = (
                LabelStatus.ACCEPTED if action == "accept" else LabelStatus.REJECTED
            )
            changed = labels.review_labels(
                catalog, ids, decision, actor=actor, request_id=request_id(request)
            )
            messages.success(request, f"{action.title()}ed {changed} label(s).")
        return redirect("learning:label-review", slug=catalog.slug)
    proposed = labels.labels_of(catalog, status=LabelStatus.PROPOSED)
    context = {
        "catalog": catalog,
        "current": "catalog-labels",
        "page": paginate(request, proposed),
        "can_manage": may_manage_labels(access_for(request.user), catalog.slug),
    }
    return render_page(request, "learning/review.html", context)


def _run(catalog: Catalog, text: str) -> Evaluation | None:
    pk = whole_number(text, MAX_ID) or 0
    return Evaluation.objects.filter(catalog=catalog, pk=pk).first()


def _compare(
    catalog: Catalog, request: HttpRequest, finished: list[Evaluation]
) -> dict[str, Any]:
    """Two runs side by side (``?a=`` and ``?b=``; the latest two by default)."""
    a = _run(catalog, request.GET.get("a", "")) or (
        finished[1] if len(finished) > 1 else None
    )
    b = _run(catalog, request.GET.get("b", "")) or (finished[0] if finished else None)
    rows = []
    if a is not None and b is not None:
        for metric in METRICS:
            left, right = a.metrics.get(metric), b.metrics.get(metric)
            delta = right - left if left is not None and right is not None else None
            text = "–" if delta is None else f"{delta:+.3f}"
            rows.append({"metric": metric, "a": left, "b": right, "delta_text": text})
    return {"a": a, "b": b, "rows": rows}


def _evaluation_context(request: HttpRequest, catalog: Catalog) -> dict[str, Any]:
    """The latest runs, the newest finished one's metrics and misses, the chart,
    the comparison and the confusable pairs."""
    runs = list(Evaluation.objects.filter(catalog=catalog).order_by("-id")[:50])
    finished = [r for r in runs if r.state == EvaluationState.SUCCEEDED]
    latest = finished[0] if finished else None
    misses = [row for row in latest.rows if row.get("miss")] if latest else []
    return {
        "catalog": catalog,
        "current": "catalog-evaluation",
        "runs": runs,
        "busy": [
            r
            for r in runs
            if r.state in (EvaluationState.QUEUED, EvaluationState.RUNNING)
        ],
        "latest": latest,
        "metrics": METRICS,
        "latest_metrics": [(m, latest.metrics.get(m)) for m in METRICS]
        if latest
        else [],
        "chart": run_chart(list(reversed(finished))),
        "compare": _compare(catalog, request, finished),
        "misses": misses[:MISSES_SHOWN],
        "miss_count": len(misses),
        "confusable": confusable_pairs(catalog, evaluation=latest)["pairs"][:20],
        "can_manage": may_manage_labels(access_for(request.user), catalog.slug),
        "accepted": catalog.labels.filter(status=LabelStatus.ACCEPTED).count(),
    }


@login_required
@rate_limited
@require_http_methods(["GET", "POST"])
def evaluation_page(request: HttpRequest, slug: str) -> HttpResponse:
    """The latest run, the runs over time, two runs side by side, the misses and
    the confusable tools; POST starts a run (current settings, or JSON tried)."""
    catalog = _catalog(request, slug, manage=request.method == "POST")
    form_error, status = "", 200
    if request.method == "POST":
        form_error, status = _start_run(request, catalog)
        if not form_error:
            return redirect("learning:evaluation", slug=catalog.slug)
    context = _evaluation_context(request, catalog)
    context["form_error"] = form_error
    response = render_page(
        request,
        "learning/evaluation.html",
        context,
        partial="learning/partials/runs.html",
        status=status,
    )
    if status == 429:
        response["Retry-After"] = str(RETRY_AFTER_S)
    return response


def _start_run(request: HttpRequest, catalog: Catalog) -> tuple[str, int]:
    """Queue a run of the accepted labels, or of an uploaded label file (each
    distinct request once, never stored): ("", 200) when queued, else why not and
    the status."""
    upload = request.FILES.get("file")
    tried = request.POST.get("settings", "").strip()
    try:
        items = None
        if upload is not None:
            items = read_label_file(upload.name or "", upload.read())
        data = jsonparse.read_field(tried, "settings") if tried else None
        evaluations.start_evaluation(
            catalog, actor=acting_user(request), labels=items, settings_data=data
        )
    except UploadError as exc:
        return str(exc), 400
    except (ValueError, ValidationError) as exc:
        return _message(exc), 400
    except LimitReached as exc:
        return str(exc), 429
    return "", 200


def _message(exc: Exception) -> str:
    if isinstance(exc, ValidationError) and hasattr(exc, "message_dict"):
        return "; ".join(m for ms in exc.message_dict.values() for m in ms)
    if isinstance(exc, EvaluationInputError | jsonparse.FieldError):
        return str(exc)
    return f"settings: not valid JSON ({exc})"


@require_safe
@login_required
def evaluation_row(
    request: HttpRequest, slug: str, run_id: int, index: int
) -> HttpResponse:
    """One evaluated request: each expected tool's rank and where it fell out."""
    catalog = _catalog(request, slug)
    run = _run(catalog, str(run_id))
    row = None
    if run is not None:
        row = next((r for r in run.rows if r.get("index") == index), None)
    if run is None or row is None:
        raise Http404("no such request in this evaluation")
    context = {
        "catalog": catalog,
        "run": run,
        "row": row,
        "current": "catalog-evaluation",
    }
    return render_page(request, "learning/evaluation_row.html", context)
