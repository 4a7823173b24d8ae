"""What a catalog owns by name and only some callers manage: a source, a webhook.

``CatalogOwned`` is the abstract model both inherit (the catalog, a name unique in
it, where it points, who made it and when), and the rules every such kind keeps
once: who may read or change it (``identity.access``, through the kind's
``managed_by``), a name that is not already taken, and the one audit row of each
change (naming the object, never its secrets: the kind passes only what it may
show). A kind's own secrets (source headers, webhook secrets) stay in fields of
its own, encrypted, which it names in ``secret_fields``: the shared API refuses
a serializer that would answer with one.
"""

from __future__ import annotations

import uuid
from typing import Any, ClassVar, TypeVar

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, models, transaction
from django.db.models import QuerySet
from django.http import Http404

from audit.actors import Actor, Caller
from audit.services import record_event
from catalog.lookups import get_catalog_for_user
from catalog.models import Catalog
from config.params import MAX_ID, whole_number
from identity.access import Access, access_for


def owning_catalog(related_name: str) -> models.ForeignKey[Catalog, Catalog]:
    """The catalog an object belongs to (deleting it deletes them), reaching its
    objects by ``related_name``: each kind declares it with its own name, which
    its migrations hold as written."""
    return models.ForeignKey(
        Catalog, on_delete=models.CASCADE, related_name=related_name
    )


class CatalogOwned(models.Model):
    """A named object of one catalog (its tables keep their own names and
    constraints: ``%(class)s`` names them after the kind); a kind adds
    ``catalog = owning_catalog("<its plural>")``."""

    catalog: models.ForeignKey[Catalog, Catalog]
    name = models.CharField(max_length=64)
    url = models.URLField(max_length=2000)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        abstract = True
        ordering = ["catalog_id", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["catalog", "name"], name="%(class)s_unique_name_per_catalog"
            )
        ]

    # The kind's fields that hold its secrets (encrypted): no answer names them.
    secret_fields: ClassVar[tuple[str, ...]] = ()

    def __str__(self) -> str:
        return f"{self.catalog.slug}/{self.name}"

    @staticmethod
    def managed_by(access: Access) -> bool:
        """Whether a caller with ``access`` may read and change this kind (within
        the catalogs it sees); every kind names its rule."""
        raise NotImplementedError


Owned = TypeVar("Owned", bound=CatalogOwned)
Row = TypeVar("Row", bound=models.Model)


def by_id(rows: QuerySet[Row], object_id: int | str) -> Row | None:
    """The row of ``rows`` a URL's id names, or None (also for anything that
    cannot be an id: the same 404 as an unknown one)."""
    pk = whole_number(str(object_id), MAX_ID)
    return rows.filter(pk=pk).first() if pk is not None else None


def noun(model: type[CatalogOwned]) -> str:
    """The kind's name in messages and audit rows: ``source``, ``webhook``."""
    return str(model._meta.verbose_name)


def permission_rule(model: type[CatalogOwned]) -> str:
    return f"permission: {model._meta.verbose_name_plural} need the admin scope"


def owned_of(
    model: type[Owned], user: Caller, slug: str
) -> tuple[Catalog, QuerySet[Owned]]:
    """The catalog's objects of this kind: 404 for a catalog the caller cannot
    see, 403 for a caller who sees it but does not manage the kind."""
    catalog = get_catalog_for_user(user, slug)
    if not model.managed_by(access_for(user)):
        raise PermissionDenied(permission_rule(model))
    rows = model._default_manager.filter(catalog=catalog).select_related("catalog")
    return catalog, rows


def get_owned_for_user(model: type[Owned], user: Caller, object_id: int | str) -> Owned:
    """One object, by the same rule as ``owned_of`` (an id that cannot be one, or
    of a catalog the caller cannot see, is the same 404 as an unknown one)."""
    access = access_for(user)
    visible = Catalog.objects.visible_to(access)
    rows = model._default_manager.filter(catalog__in=visible)
    found = by_id(rows.select_related("catalog"), object_id)
    if found is None:
        raise Http404(f"{noun(model)}: no such {noun(model)}")
    if not model.managed_by(access):
        raise PermissionDenied(permission_rule(model))
    return found


def require_manager(model: type[CatalogOwned], actor: Actor, catalog: Catalog) -> None:
    """The services' own check: the caller has already made sure the catalog is
    visible (404 otherwise); a write still refuses who may not see or manage."""
    access = access_for(actor)
    if not access.may_see_catalog(catalog.slug) or not model.managed_by(access):
        raise PermissionDenied(permission_rule(model))


def save_named(found: CatalogOwned, fields: list[str] | None = None) -> None:
    """Save ``found`` (all of a new one, else ``fields``), refusing a name its
    catalog already gives another: asked first for a clear 400, and caught from
    the unique constraint when two requests race."""
    rule = f"name: a {noun(type(found))} named {found.name!r} already exists here"
    kind: Any = type(found)  # a concrete kind: its catalog is a field
    taken = kind._default_manager.filter(catalog=found.catalog, name=found.name)
    if taken.exclude(pk=found.pk).exists():
        raise ValidationError({"name": [rule]})
    try:
        with transaction.atomic():
            found.save(update_fields=fields)
    except IntegrityError as exc:
        raise ValidationError({"name": [rule]}) from exc


def record_change(
    found: CatalogOwned,
    event_type: str,
    action: str,
    *,
    actor: Actor,
    request_id: uuid.UUID | None,
    details: dict[str, Any],
    summary: str = "",
) -> None:
    """The audit row of one change, in the caller's transaction: the action, the
    object's name and ``details`` (what the kind may show: never a secret)."""
    kind = noun(type(found))
    record_event(
        event_type,
        actor=actor,
        request_id=request_id,
        catalog_slug=found.catalog.slug,
        catalog_version=found.catalog.version,
        summary=summary or f"{kind} {found.name!r}: {action}",
        input={"action": action, kind: found.name, **details},
        output={f"{kind}_id": found.pk},
    )
