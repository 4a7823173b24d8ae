"""Console pages of sources (admins only; sources.querysets decides): a catalog's
sources with the add form, and one source's page (test, sync now, edit, delete, the
last result and the tools it brought)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods, require_POST

from config.console_views import deleting_view
from config.http import request_id
from config.pages import acting_user, render_page
from config.ratelimit import rate_limited
from jobs.models import Job
from sources import services
from sources.forms import SourceEditForm, SourceForm, header_lines
from sources.querysets import get_source_for_user, sources_of
from sources.secrets import masked
from sources.upstream import check_connection


@require_http_methods(["GET", "HEAD", "POST"])
@login_required
@rate_limited
def source_list(request: HttpRequest, slug: str) -> HttpResponse:
    """The catalog's sources; POST adds one."""
    catalog, sources = sources_of(request.user, slug)
    form = SourceForm()
    if request.method == "POST":
        form = SourceForm(request.POST)
        if form.is_valid():
            try:
                added = services.create_source(
                    catalog,
                    **form.cleaned_data,
                    actor=acting_user(request),
                    request_id=request_id(request),
                )
            except ValidationError as exc:
                form.add_service_error(exc)
            else:
                messages.success(
                    request,
                    f"Added source {added.source.name}; its first sync is queued "
                    f"(job #{added.sync_job.pk}, below).",
                )
                return redirect("sources:source-detail", source_id=added.source.pk)
    context = {"catalog": catalog, "sources": sources, "form": form}
    return render_page(request, "sources/source_list.html", context)


@require_http_methods(["GET", "HEAD", "POST"])
@login_required
@rate_limited
def source_detail(request: HttpRequest, source_id: int) -> HttpResponse:
    """One source; POST edits its url, headers and timeout."""
    source = get_source_for_user(request.user, source_id)
    initial = {
        "name": source.name,
        "kind": source.kind,
        "url": source.url,
        "headers": header_lines(masked(source)),
        "timeout_seconds": source.timeout_seconds,
    }
    form = SourceEditForm(initial=initial)
    if request.method == "POST":
        form = SourceEditForm(request.POST, initial=initial)
        if form.is_valid():
            data = {k: v for k, v in form.cleaned_data.items() if k != "name"}
            try:
                updated = services.update_source(
                    source,
                    data,
                    actor=acting_user(request),
                    request_id=request_id(request),
                )
            except ValidationError as exc:
                form.add_service_error(exc)
            else:
                messages.success(request, f"Saved source {source.name}.")
                if updated.headers_dropped:
                    warning = services.dropped_warning(updated.headers_dropped)
                    messages.warning(request, warning)
                return redirect("sources:source-detail", source_id=source.pk)
    links = source.links.select_related("tool").order_by("gone", "upstream_name")
    last_job = (
        Job.objects.filter(kind="sync", options__source_id=source.pk)
        .defer("payload")
        .first()
    )
    context = {"source": source, "links": links, "form": form, "last_job": last_job}
    return render_page(request, "sources/source_detail.html", context)


@require_POST
@login_required
@rate_limited
def source_test(request: HttpRequest, source_id: int) -> HttpResponse:
    """Test the connection; htmx swaps the answer in place."""
    source = get_source_for_user(request.user, source_id)
    context = {"source": source, "result": check_connection(source)}
    return render_page(
        request,
        "sources/source_detail_test.html",
        context,
        partial="sources/partials/test_result.html",
    )


@require_POST
@login_required
@rate_limited
def source_sync(request: HttpRequest, source_id: int) -> HttpResponse:
    """Queue a sync now and show its job's progress."""
    source = get_source_for_user(request.user, source_id)
    job = services.start_sync(source, actor=acting_user(request))
    return redirect("console:job-detail", job_id=job.pk)


# Delete the source; its tools stay in the catalog, disabled.
source_delete = deleting_view(
    find=get_source_for_user,
    delete=services.delete_source,
    done=lambda source: f"Deleted source {source.name}; its tools are disabled.",
    back="sources:source-list",
)
