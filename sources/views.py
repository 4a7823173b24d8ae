"""Console pages of sources (admins only; catalog.owned decides): a catalog's
sources with the add form, and one source's page (test, sync now, edit, delete, the
last result and the tools it brought), on catalog.owned_pages' list and detail."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from catalog.models import Catalog
from catalog.owned_pages import OwnedDetailPage, OwnedListPage, console_page
from config.console_views import deleting_view
from config.pages import acting_user, render_page
from config.ratelimit import rate_limited
from jobs.models import Job
from sources import services
from sources.forms import SourceEditForm, SourceForm, header_lines
from sources.models import Source
from sources.querysets import get_source_for_user
from sources.secrets import masked
from sources.upstream import check_connection


class SourceList(OwnedListPage):
    """The catalog's sources; POST adds one (its first sync queued)."""

    model = Source
    form_class = SourceForm
    template_name = "sources/source_list.html"
    create = services.create_source

    def created(
        self, catalog: Catalog, rows: QuerySet[Source], made: services.SourceAdded
    ) -> HttpResponse:
        messages.success(
            self.request,
            f"Added source {made.source.name}; its first sync is queued "
            f"(job #{made.sync_job.pk}, below).",
        )
        return redirect("sources:source-detail", source_id=made.source.pk)


class SourceDetail(OwnedDetailPage):
    """One source; POST edits its url, headers and timeout (the name is fixed)."""

    model = Source
    form_class = SourceEditForm
    template_name = "sources/source_detail.html"
    update = services.update_source
    pk_url_kwarg = "source_id"
    detail_url = "sources:source-detail"
    fixed = ("name",)

    def initial(self, found: Source) -> dict[str, Any]:
        return {
            "name": found.name,
            "kind": found.kind,
            "url": found.url,
            "headers": header_lines(masked(found)),
            "timeout_seconds": found.timeout_seconds,
        }

    def updated(self, done: services.SourceUpdate) -> None:
        if done.headers_dropped:
            warning = services.dropped_warning(done.headers_dropped)
            messages.warning(self.request, warning)

    def page(self, found: Source, form: SourceEditForm) -> HttpResponse:
        links = found.links.select_related("tool").order_by("gone", "upstream_name")
        last_job = (
            Job.objects.filter(kind="sync", options__source_id=found.pk)
            .defer("payload")
            .first()
        )
        context = {"source": found, "links": links, "form": form, "last_job": last_job}
        return render_page(self.request, self.template_name, context)


source_list = console_page(SourceList)
source_detail = console_page(SourceDetail)


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
