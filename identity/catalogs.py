"""The one thing identity asks of the catalog: which of some slugs name a catalog.

People and keys are limited to catalogs by slug, and identity sits below the
catalog app, so the catalog lends this answer at start-up (``CatalogConfig.ready``
calls ``register_catalog_names``). Unregistered, the question fails loudly rather
than letting a limit name a catalog nobody checked."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from django.core.exceptions import ImproperlyConfigured

CatalogNames = Callable[[Iterable[str]], set[str]]
_existing: list[CatalogNames] = []


def register_catalog_names(existing: CatalogNames) -> None:
    """Use ``existing(slugs)`` (the slugs among them that name a catalog)."""
    _existing[:] = [existing]


def existing_catalogs(slugs: Iterable[str]) -> set[str]:
    """The slugs among ``slugs`` that name a catalog."""
    if not _existing:
        raise ImproperlyConfigured(
            "identity: no catalog names registered (catalog.apps.CatalogConfig)"
        )
    return _existing[0](slugs)
