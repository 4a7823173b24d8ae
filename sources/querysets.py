"""Reading sources within access: the lookup every API view and console page uses."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404

from audit.actors import Caller
from catalog.lookups import get_catalog_for_user
from catalog.models import Catalog
from config.params import MAX_ID, whole_number
from identity.access import access_for
from sources.models import Source


def sources_of(user: Caller, slug: str) -> tuple[Catalog, QuerySet[Source]]:
    """The catalog's sources: 404 for a catalog the caller cannot see, 403 for a
    caller who sees it but does not manage sources (admins only)."""
    catalog = get_catalog_for_user(user, slug)
    if not access_for(user).manages_sources:
        raise PermissionDenied("permission: sources need the admin scope")
    return catalog, Source.objects.filter(catalog=catalog).select_related("catalog")


def get_source_for_user(user: Caller, source_id: int | str) -> Source:
    """One source, by the same rule as ``sources_of``."""
    access = access_for(user)
    visible = Catalog.objects.visible_to(access)
    pk = whole_number(str(source_id), MAX_ID)
    source = (
        Source.objects.filter(pk=pk, catalog__in=visible)
        .select_related("catalog")
        .first()
        if pk is not None
        else None
    )
    if source is None:
        raise Http404("source: no such source")
    if not access.manages_sources:
        raise PermissionDenied("permission: sources need the admin scope")
    return source
