"""The tool list's bulk edit: review (the count and the first names), confirm,
then change at once or watch the job(s) a large set runs as."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from catalog.bulk_forms import BulkEditForm
from catalog.forms import ToolFilterForm
from catalog.models import Catalog, Tool
from catalog.querysets import ToolQuerySet, known_roles
from catalog.services import bulk_edit
from catalog.views.common import writer_required
from config.http import request_id
from config.pages import acting_user, render_page
from config.ratelimit import rate_limited
from jobs import services as jobs

NAMES_SHOWN = 30


def _back(form: BulkEditForm) -> str:
    query = form.data.get("filter_query", "")
    url = reverse("console:tool-list")
    return f"{url}?{query}" if query else url


def _tools(request: HttpRequest, form: BulkEditForm) -> tuple[ToolQuerySet, str]:
    """The tools the form names, only among those the curator manages."""
    managed = Tool.objects.managed_by(request.user)
    data = form.cleaned_data
    if data["scope"] == "selected":
        return managed.filter(pk__in=data["ids"]), "ids"
    catalogs = Catalog.objects.visible_to(request.user).only("slug", "name")
    categories = managed.values_list("category", flat=True).distinct()
    filters = ToolFilterForm(
        QueryDict(data.get("filter_query", "")),
        catalogs=catalogs,
        categories=categories,
    )
    if not filters.is_valid():
        # The list ignores a bad filter; a bulk edit must not widen its set.
        bad = ", ".join(sorted(filters.errors))
        raise ValidationError(f"filter: not a filter of the list ({bad})")
    return filters.apply(managed), "filter"


@require_POST
@writer_required
@rate_limited
def tool_bulk(request: HttpRequest) -> HttpResponse:
    """First post: the review page naming the count. Confirmed with that same
    count: the change, at once or as jobs; a count that moved is reviewed again."""
    catalog_ids = list(
        Catalog.objects.visible_to(request.user).values_list("pk", flat=True)
    )
    form = BulkEditForm(request.POST, roles=known_roles(catalog_ids))
    context: dict[str, object] = {"form": form, "back": _back(form)}
    if not form.is_valid():
        return render_page(request, "catalog/tool_bulk.html", context, status=400)
    values, delete = form.change_values()
    try:
        tools, field_name = _tools(request, form)
        count = tools.count()
        change = bulk_edit.check_change(values, delete, form.cleaned_data["reason"])
        if count > bulk_edit.BULK_MAX_TOOLS:
            bulk_edit.tool_ids(tools, field_name)
    except ValidationError as exc:
        form.add_error(None, exc.messages)
        return render_page(request, "catalog/tool_bulk.html", context, status=400)
    if count == 0:
        messages.info(request, "No tools you manage match; nothing changed.")
        return redirect(_back(form))
    if form.cleaned_data.get("confirm") != count:
        names = list(
            tools.order_by("name").values_list("name", flat=True)[:NAMES_SHOWN]
        )
        context.update(count=count, names=names, more=count - len(names))
        context["large"] = count > bulk_edit.BULK_INLINE_MAX
        return render_page(request, "catalog/tool_bulk.html", context)
    with jobs.watch_enqueues() as watch:
        result = bulk_edit.bulk_edit(
            tools,
            change,
            actor=acting_user(request),
            field_name=field_name,
            request_id=request_id(request),
        )
    return _done(request, form, result, watch.warning)


def _done(
    request: HttpRequest,
    form: BulkEditForm,
    result: bulk_edit.BulkResult,
    warning: str | None,
) -> HttpResponse:
    if warning:
        messages.warning(request, f"Bulk edit saved; {warning}.")
    if len(result.jobs) == 1:
        return redirect("console:job-detail", job_id=result.jobs[0].pk)
    if result.jobs:
        messages.info(request, f"{len(result.jobs)} jobs started, one per catalog.")
        return redirect("console:job-list")
    counts = ", ".join(f"{n} {k}" for k, n in result.counts.items() if n)
    messages.success(request, f"{form.action_label} on {result.total} tools: {counts}.")
    for rejected in result.rejected[:5]:
        messages.error(request, f"{rejected['name']}: {rejected['reason']}")
    return redirect(_back(form))
