"""Helpers the console views share: permission checks, lookups, rendering."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial as partial_call
from functools import wraps
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied
from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.cache import patch_vary_headers

from catalog.access import access_for
from catalog.access import get_catalog_for_user as _catalog_for_user
from catalog.htmx import is_htmx_partial
from catalog.models import Catalog, Job, Tool

PAGE_SIZE = 25
View = Callable[..., HttpResponse]


def can_write(request: HttpRequest) -> bool:
    """Curators and admins write the catalog; everyone signed in reads it.

    Remembered on the request: templates ask several times per page."""
    cached = getattr(request, "_quiver_can_write", None)
    if cached is None:
        cached = access_for(request.user).can_write
        setattr(request, "_quiver_can_write", cached)  # noqa: B010
    return bool(cached)


def writer_required(view: View) -> View:
    """Signed in (else the login page) and allowed to write (else 403)."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not can_write(request):
            raise PermissionDenied(
                "writing the catalog needs the curator or admin scope"
            )
        return view(request, *args, **kwargs)

    return login_required(wrapped)


def acting_user(request: HttpRequest) -> AbstractBaseUser:
    """The signed-in user a service records as the actor."""
    if isinstance(request.user, AnonymousUser):
        raise PermissionDenied("sign in first")
    return request.user


def get_tool_for_user(request: HttpRequest, tool_id: int) -> Tool:
    tools = Tool.objects.visible_to(request.user).select_related("catalog")
    return get_object_or_404(tools, pk=tool_id)


def get_job_for_user(request: HttpRequest, job_id: int) -> Job:
    jobs = (
        Job.objects.visible_to(request.user)
        .select_related("catalog", "created_by")
        .defer("payload")
    )
    return get_object_or_404(jobs, pk=job_id)


def get_catalog_for_user(request: HttpRequest, slug: str) -> Catalog:
    return _catalog_for_user(request.user, slug)


def visible_catalogs(request: HttpRequest) -> QuerySet[Catalog]:
    return Catalog.objects.visible_to(request.user).only("slug", "name")


def paginate(request: HttpRequest, items: QuerySet[Any]) -> Page:
    return Paginator(items, PAGE_SIZE).get_page(request.GET.get("page"))


def render_page(
    request: HttpRequest,
    template: str,
    context: Mapping[str, Any],
    *,
    partial: str | None = None,
    status: int = 200,
) -> HttpResponse:
    """The whole page, or only ``partial`` when htmx asked for a fragment.

    Both answers share a URL, so the response varies on HX-Request: a browser must
    never show a cached fragment as a page.
    """
    chosen = partial if partial and is_htmx_partial(request) else template
    # Lazy: the query runs only when a whole page renders the navigation.
    full_context = {
        "nav_catalogs": visible_catalogs(request),
        # A callable, so the permission query runs only if the template asks.
        "can_write": partial_call(can_write, request),
        "is_admin": partial_call(lambda: access_for(request.user).is_admin),
        **context,
    }
    response = render(request, chosen, full_context, status=status)
    patch_vary_headers(response, ["HX-Request"])
    return response
