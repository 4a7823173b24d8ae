"""The one module of single sign-on that reads and writes people's access: every
use of the identity and access code (who is an admin, who may give what, the
audited write of a person's groups and catalogs) goes through here.

A sign-in's changes are the system's (``actor`` None) in an ``access_changes``
block, so each person changed is one ``access_changed`` event, ``via`` "sso", in
the sign-in's transaction. Whoever edits a mapping must hold everything it gives
(the People page's rule), so a mapping never lets an admin hand out more than
they hold.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.contrib.auth.models import Group

from audit.actors import Actor
from identity import catalogs
from identity.access import ALL_CATALOGS, Access, access_for
from identity.access_changes import SERVICE_USER_PREFIX, access_changes
from identity.access_people import Manager, PersonGrant, Refused
from identity.api.fields import MAX_CATALOGS, CatalogsField
from identity.forms import GrantForm
from identity.models import UserCatalogAccess

__all__ = [
    "ALL_CATALOGS",
    "MAX_CATALOGS",
    "SERVICE_USER_PREFIX",
    "CatalogsField",
    "GrantForm",
    "Refused",
    "access_of",
    "existing_catalogs",
    "mapping_refusal",
    "set_grant",
    "system_changes",
]


def access_of(user: Actor) -> Access:
    """What ``user`` may see and do (the one access module's answer)."""
    return access_for(user)


def mapping_refusal(
    actor: Actor, groups: Sequence[str], catalogs: Sequence[str] | None
) -> str:
    """'' when ``actor`` holds everything a mapping giving these groups and
    catalogs (None: every one) gives, else "field: why"."""
    asked = PersonGrant().with_groups(groups).with_catalogs(catalogs)
    return Manager(actor).refusal(asked)


def existing_catalogs(slugs: Iterable[str]) -> list[str]:
    """The slugs among ``slugs`` that name a catalog, sorted."""
    return sorted(catalogs.existing_catalogs(set(slugs)))


@contextmanager
def system_changes(via: str, request_id: uuid.UUID | None = None) -> Iterator[None]:
    """A transaction whose access changes are recorded as the system's, ``via``,
    of the request ``request_id``."""
    with access_changes(actor=None, via=via, request_id=request_id):
        yield


def set_grant(
    person: Any,
    *,
    groups: Sequence[Group],
    catalogs: list[str] | None,
    via: str,
    request_id: uuid.UUID | None = None,
) -> None:
    """Give ``person`` exactly these groups and catalogs (None: every catalog; an
    empty list: none), audited as one event when anything changed."""
    with system_changes(via, request_id):
        person.groups.set(groups)
        row = UserCatalogAccess.objects.filter(user_id=person.pk).first()
        if catalogs is None:
            if row is not None:
                row.delete()
        elif row is None:
            UserCatalogAccess.objects.create(user=person, catalogs=catalogs)
        elif list(row.catalogs) != catalogs:
            row.catalogs = catalogs
            row.save(update_fields=["catalogs"])
