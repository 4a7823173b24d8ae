"""Read queries of OAuth: which connections a person sees (their own; an
admin, everyone's), newest first, with what the console shows of each."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from audit.actors import Caller
from identity.access import access_for


def connections_visible_to(user: Caller, connections: QuerySet[Any]) -> QuerySet[Any]:
    access = access_for(user)
    if not access.signed_in or access.is_key:
        return connections.none()
    if not access.is_admin:
        connections = connections.filter(person_id=user.pk)
    return connections.select_related("client", "principal").order_by(
        "revoked", "-created"
    )
