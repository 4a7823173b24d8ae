"""What the console's navigation (templates/partials/topbar.html) reads: the
catalogs the caller may pick and what the caller may do, as a context processor
(settings.TEMPLATES) so every page rendered with its request has them. Lazy: the
queries run only when a page renders the navigation."""

from __future__ import annotations

from functools import partial
from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest

from catalog.models import Catalog
from identity.access import access_for


def visible_catalogs(request: HttpRequest) -> QuerySet[Catalog]:
    return Catalog.objects.visible_to(request.user).only("slug", "name")


def navigation(request: HttpRequest) -> dict[str, Any]:
    access = partial(access_for, request.user)
    return {
        "nav_catalogs": visible_catalogs(request),
        "can_write": lambda: access().can_write,
        "is_admin": lambda: access().is_admin,
        "can_audit": lambda: access().can_audit,
        "can_approve": lambda: access().decides_approvals,
        "sees_whole_catalog": lambda: access().sees_whole_catalog,
    }
