"""Console page plumbing every app shares: who is acting, pages of a list, and one
renderer for whole pages and their htmx fragments (with the navigation's context)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial as partial_call
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied
from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.cache import patch_vary_headers

from catalog.models import Catalog
from config.htmx import is_htmx_partial
from identity.access import access_for

PAGE_SIZE = 25


def acting_user(request: HttpRequest) -> AbstractBaseUser:
    """The signed-in user a service records as the actor."""
    if isinstance(request.user, AnonymousUser):
        raise PermissionDenied("sign in first")
    return request.user


def paginate(request: HttpRequest, items: QuerySet[Any]) -> Page:
    return Paginator(items, PAGE_SIZE).get_page(request.GET.get("page"))


def can_write(request: HttpRequest) -> bool:
    """Curators and admins write the catalog (identity.access decides)."""
    return access_for(request.user).can_write


def visible_catalogs(request: HttpRequest) -> QuerySet[Catalog]:
    return Catalog.objects.visible_to(request.user).only("slug", "name")


def nav_context(request: HttpRequest) -> dict[str, Any]:
    """What the console's navigation (templates/partials/topbar.html) reads. Lazy:
    the queries run only when a whole page renders the navigation."""
    access = partial_call(access_for, request.user)
    return {
        "nav_catalogs": visible_catalogs(request),
        "can_write": lambda: access().can_write,
        "is_admin": lambda: access().is_admin,
        "can_audit": lambda: access().can_audit,
        "can_approve": lambda: access().decides_approvals,
        "sees_whole_catalog": lambda: access().sees_whole_catalog,
    }


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
    full_context = {**nav_context(request), **context}
    response = render(request, chosen, full_context, status=status)
    patch_vary_headers(response, ["HX-Request"])
    return response
