"""Imports and the background jobs they (and re-indexes) run as."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods, require_safe

from catalog import import_preview, job_reads, services
from catalog.choices import ImportOutcome
from catalog.formats import FORMATS
from catalog.forms import ImportForm
from catalog.models import Catalog
from catalog.navigation import visible_catalogs
from catalog.services.catalogs import DEFAULT_CATALOG
from catalog.views.common import get_job_for_user, writer_required
from config import jsonparse
from config.pages import acting_user, paginate, render_page
from config.ratelimit import rate_limited
from jobs import services as jobs
from jobs.choices import JobKind, JobState
from jobs.models import Job

ACTIVE_STATES = (JobState.QUEUED, JobState.RUNNING)
REINDEX_COUNTS = ("embedded", "unchanged", "failed")
BULK_COUNTS = ("updated", "unchanged", "deleted", "rejected", "skipped")
# A page polled every second must stay small, whatever the import's size.
MAX_ITEMS_SHOWN = 500


@require_http_methods(["GET", "HEAD", "POST"])
@writer_required
@rate_limited
def import_tools(request: HttpRequest) -> HttpResponse:
    """Upload or paste a document and see the dry run (nothing written); the
    report's button posts that same document back to start the import."""
    catalogs = visible_catalogs(request)
    if request.method != "POST":
        initial = {"catalog": request.GET.get("catalog") or DEFAULT_CATALOG}
        form = ImportForm(initial=initial, catalogs=catalogs)
        return _import_page(request, form)
    if "confirm" in request.POST:
        return _confirm_import(request, catalogs)
    form = ImportForm(request.POST, request.FILES, catalogs=catalogs)
    if form.is_valid():
        data = form.cleaned_data
        try:
            report = services.preview_import(
                data["catalog"],
                data["document"],
                data["format"] or None,
                actor=acting_user(request),
                names=data["names"],
            )
        except ValidationError as exc:
            form.add_service_error(exc)
        else:
            return _import_page(request, form, report, data["document"])
    return _import_page(request, form)


def _import_page(
    request: HttpRequest,
    form: ImportForm,
    report: dict[str, Any] | None = None,
    document: Any = None,
    *,
    status: int = 200,
    error: str = "",
) -> HttpResponse:
    context: dict[str, Any] = {"form": form, "report": report, "error": error}
    context["samples"] = [(fmt, f"samples/import-{fmt}.json") for fmt in FORMATS]
    if report is not None:
        text = import_preview.document_text(document)
        context["document_text"] = text
        context["token"] = import_preview.sign(request.user, report, text)
        context["items"] = report["items"][:MAX_ITEMS_SHOWN]
        context["more_items"] = len(report["items"]) - len(context["items"])
    return render_page(request, "catalog/import.html", context, status=status)


def _confirm_import(request: HttpRequest, catalogs: Any) -> HttpResponse:
    """Import exactly the document the dry run showed, for the one who ran it."""
    text = request.POST.get("document", "")
    try:
        slug, fmt, names = import_preview.check(
            request.POST.get("token", ""), request.user, text
        )
        catalog = catalogs.get(slug=slug)
        with jobs.watch_enqueues() as watch:
            job = services.start_import(
                catalog,
                jsonparse.loads(text),
                fmt,
                actor=acting_user(request),
                names=names,
            )
    except (import_preview.PreviewRefused, Catalog.DoesNotExist, ValidationError):
        form = ImportForm(initial={"catalog": DEFAULT_CATALOG}, catalogs=catalogs)
        return _import_page(request, form, status=400, error=import_preview.AGAIN)
    if watch.warning:
        messages.warning(request, f"Import saved; {watch.warning}.")
    return redirect("console:job-detail", job_id=job.pk)


@require_safe
@login_required
def job_list(request: HttpRequest) -> HttpResponse:
    jobs = (
        Job.objects.visible_to(request.user)
        .select_related("catalog", "created_by")
        .defer("payload", "items", "errors")
    )
    return render_page(
        request,
        "catalog/job_list.html",
        {"page": paginate(request, jobs)},
        partial="catalog/partials/job_table.html",
    )


def job_counts(job: Job) -> list[tuple[str, int]]:
    """The outcome counts worth showing for this kind of job, in a fixed order."""
    if job.kind == JobKind.REINDEX:
        keys: Any = REINDEX_COUNTS
    elif job.kind == JobKind.BULK:
        keys = BULK_COUNTS
    else:
        keys = ImportOutcome.values
    return [(key, int(job.counts.get(key, 0))) for key in keys]


@require_safe
@login_required
def job_detail(request: HttpRequest, job_id: int) -> HttpResponse:
    """Progress, counts and the items the reader may see (job_reads.job_for_reader);
    the fragment polls itself while the job runs."""
    job = get_job_for_user(request, job_id)
    readable = job_reads.job_for_reader(job, request.user)
    items = readable.items[:MAX_ITEMS_SHOWN]
    context = {
        "job": job,
        "active": job.state in ACTIVE_STATES,
        "counts": job_counts(job),
        "items": items,
        "errors": readable.errors,
        "more_items": len(readable.items) - len(items),
        "hidden_items": readable.hidden_items,
        "hidden_errors": readable.hidden_errors,
    }
    return render_page(
        request,
        "catalog/job_detail.html",
        context,
        partial="catalog/partials/job_progress.html",
    )
