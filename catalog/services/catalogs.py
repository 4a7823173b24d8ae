"""Writes to catalogs."""

from __future__ import annotations

from django.db import transaction

from catalog.models import Catalog

DEFAULT_CATALOG = "default"


def ensure_default_catalog() -> Catalog:
    """The ``default`` catalog always exists; create it when missing."""
    catalog, _ = Catalog.objects.get_or_create(
        slug=DEFAULT_CATALOG,
        defaults={
            "name": "Default",
            "description": "The catalog agents use by default.",
        },
    )
    return catalog


def create_catalog(slug: str, name: str, description: str = "") -> Catalog:
    """A new, empty catalog; full_clean names any bad field."""
    with transaction.atomic():
        catalog = Catalog(slug=slug, name=name or slug, description=description)
        catalog.full_clean()
        catalog.save()
    return catalog
