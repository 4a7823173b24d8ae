"""Catalogs: counts, exports, creating one, and re-embedding one."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods, require_POST

from catalog import services
from catalog.formats import FORMATS
from catalog.forms import CatalogForm
from catalog.lookups import get_catalog_for_user
from catalog.models import Catalog
from catalog.services.embeddings import start_reindex
from catalog.versions import seen_by_each
from catalog.views.common import writer_required
from config.http import request_id
from config.pages import acting_user, render_page
from config.ratelimit import rate_limited
from identity.access import access_for


@require_http_methods(["GET", "HEAD", "POST"])
@login_required
@rate_limited
def catalog_list(request: HttpRequest) -> HttpResponse:
    """Every visible catalog with its counts; curators create catalogs here too."""
    form = CatalogForm()
    if request.method == "POST":
        if (
            not access_for(request.user).can_write
            or not access_for(request.user).all_catalogs
        ):
            raise PermissionDenied(
                "creating a catalog needs the curator or admin scope and every catalog"
            )
        form = CatalogForm(request.POST)
        if form.is_valid():
            try:
                catalog = services.create_catalog(
                    **form.cleaned_data,
                    actor=acting_user(request),
                    request_id=request_id(request),
                )
            except ValidationError as exc:
                form.add_service_error(exc)
            else:
                messages.success(request, f"Created catalog {catalog.slug}.")
                return redirect("console:catalog-list")
    access = access_for(request.user)
    catalogs = list(Catalog.objects.visible_to(access).with_counts(access))
    seen = seen_by_each(catalogs, access)
    for catalog in catalogs:  # its version as this reader is told it
        catalog.seen = seen[catalog.pk]  # type: ignore[attr-defined]
    context = {"catalogs": catalogs, "form": form, "formats": FORMATS}
    return render_page(request, "catalog/catalog_list.html", context)


@require_POST
@writer_required
@rate_limited
def catalog_reindex(request: HttpRequest, slug: str) -> HttpResponse:
    """Queue a re-embed of the whole catalog and go to its job page."""
    catalog = get_catalog_for_user(request.user, slug)
    job = start_reindex(catalog, actor=acting_user(request))
    return redirect("console:job-detail", job_id=job.pk)
