"""Writes to catalogs."""

from __future__ import annotations

import uuid

from django.db import transaction

from audit.actors import Actor
from audit.choices import EventType
from audit.services import record_event
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


def create_catalog(
    slug: str,
    name: str,
    description: str = "",
    *,
    actor: Actor = None,
    request_id: uuid.UUID | None = None,
) -> Catalog:
    """A new, empty catalog; full_clean names any bad field; an audit event."""
    with transaction.atomic():
        catalog = Catalog(slug=slug, name=name or slug, description=description)
        catalog.full_clean()
        catalog.save()
        record_event(
            EventType.CATALOG_CREATED,
            actor=actor,
            request_id=request_id,
            catalog_slug=catalog.slug,
            catalog_version=catalog.version,
            summary=f"catalog {catalog.slug!r} created",
            input={"slug": slug, "name": name, "description": description},
            output={"catalog_id": catalog.pk, "slug": catalog.slug},
        )
    return catalog
