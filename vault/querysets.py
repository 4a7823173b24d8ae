"""Reading connections within access: a person sees and changes only their own,
and connects only sources of the catalogs they may see."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.http import Http404

from audit.actors import Caller
from catalog.models import Catalog
from config.params import MAX_ID, whole_number
from identity.access import access_for
from sources.models import Source
from vault.models import Connection, SourceAuthorization


@dataclass(frozen=True)
class Row:
    """One source that asks each person for OAuth, and the person's connection."""

    source: Source
    authorization: SourceAuthorization
    connection: Connection | None


def _person(user: Caller) -> Any:
    """People only: a key's service user has no browser to connect with."""
    access = access_for(user)
    if not access.signed_in or access.is_key:
        raise Http404("connections: for people signed in to the console")
    return access


def connections_page(user: Caller) -> list[Row]:
    """Every personal source the person may use, with their connection."""
    access = _person(user)
    visible = Catalog.objects.visible_to(access)
    auths = (
        SourceAuthorization.objects.filter(source__catalog__in=visible)
        .select_related("source__catalog")
        .order_by("source__catalog__slug", "source__name")
    )
    mine = {c.source_id: c for c in Connection.objects.filter(person_id=user.pk)}
    return [Row(a.source, a, mine.get(a.source_id)) for a in auths]


def connectable_source(user: Caller, source_id: Any) -> Source:
    """A personal source of a catalog the person may see; 404 otherwise."""
    access = _person(user)
    pk = whole_number(str(source_id), MAX_ID)
    visible = Catalog.objects.visible_to(access)
    found = (
        Source.objects.filter(pk=pk, catalog__in=visible, authorization__isnull=False)
        .select_related("catalog")
        .first()
        if pk is not None
        else None
    )
    if found is None:
        raise Http404("source: no such source asks you for authorization")
    return found


def own_connection(user: Caller, public_id: str) -> Connection:
    """The person's own connection by its public id; 404 for anyone else's."""
    _person(user)
    try:
        key = uuid.UUID(str(public_id))
    except ValueError:
        raise Http404("connection: no such connection") from None
    found = (
        Connection.objects.filter(public_id=key, person_id=user.pk)
        .select_related("source__catalog", "person")
        .first()
    )
    if found is None:
        raise Http404("connection: no such connection")
    return found
