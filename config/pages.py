"""Console page plumbing every app shares: who is acting, pages of a list, and one
renderer for whole pages and their htmx fragments (the navigation's context comes
from a context processor, catalog.navigation)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied
from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.cache import patch_vary_headers

from config.htmx import is_htmx_partial

PAGE_SIZE = 25


def acting_user(request: HttpRequest) -> User:
    """The signed-in user a service records as the actor."""
    if isinstance(request.user, AnonymousUser):
        raise PermissionDenied("sign in first")
    return request.user


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
    response = render(request, chosen, dict(context), status=status)
    patch_vary_headers(response, ["HX-Request"])
    return response
