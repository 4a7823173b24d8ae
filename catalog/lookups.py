"""A catalog for a caller: the row when identity.access says they may see it (and,
for labels, read or manage them), else 404 or PermissionDenied naming who may."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404

from audit.actors import Caller
from catalog.models import Catalog
from catalog.reads import catalog_by_slug
from identity.access import (
    LABEL_MANAGERS,
    LABEL_READERS,
    access_for,
    may_manage_labels,
    may_read_labels,
)


def get_catalog_for_user(user: Caller, slug: str) -> Catalog:
    """The catalog if the caller may see it, else 404 (never a hint that it exists).

    A read never writes: the ``default`` catalog is made by a migration. The rule
    is ``Catalog.objects.visible_to``'s, checked on the caller's ``Access`` before
    the row is read (catalog.reads: no query building on every request)."""
    visible = access_for(user).may_see_catalog(slug)
    catalog = catalog_by_slug(slug) if visible else None
    if catalog is None:
        raise Http404(f"catalog: no catalog {slug!r}")
    return catalog


def get_labels_catalog(user: Caller, slug: str, *, manage: bool = False) -> Catalog:
    """The catalog whose labels, evaluations and learning the caller reads (or,
    with ``manage``, changes): 404 unless visible, else PermissionDenied naming
    who may. The API and the console both ask this."""
    catalog = get_catalog_for_user(user, slug)
    access = access_for(user)
    if manage and not may_manage_labels(access, slug):
        raise PermissionDenied(LABEL_MANAGERS)
    if not may_read_labels(access, slug):
        raise PermissionDenied(LABEL_READERS)
    return catalog
