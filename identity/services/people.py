"""People: create a person, set their groups and catalog limit, deactivate them.

The console's People page and ``create_person`` call these; each runs inside
``access_changes``, which records one ``access_changed`` event per person changed in
the same transaction. Only admins (or the system) manage people, nobody manages a
person with more than they have (identity.access_people), and "all catalogs" is an
explicit choice (``catalogs=None``): an empty list is refused as a mistake.
The rules: docs/explanation/security.md, People and access.
"""

from __future__ import annotations

import secrets
import uuid
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import QuerySet
from django.http import Http404

from audit.actors import Actor
from identity.access import Access, access_for
from identity.access_changes import SERVICE_USER_PREFIX, access_changes
from identity.access_people import (
    Manager,
    PersonGrant,
    grant_of,
    grants_of,
)
from identity.catalogs import existing_catalogs
from identity.models import UserCatalogAccess

STANDARD_GROUPS = ("admin", "curator", "compliance", "approver")


def management_problem(actor: Actor, person: Any) -> str:
    """'' when ``actor`` may manage ``person`` as they stand, else "field: why"."""
    return Manager(actor).refusal(grant_of(person))


def manageable(actor: Actor, people: list[Any]) -> set[int]:
    """The pks among ``people`` the actor may manage (a few queries in all)."""
    manager = Manager(actor)
    grants = grants_of(person.pk for person in people)
    return {pk for pk, grant in grants.items() if not manager.refusal(grant)}


def people_visible_to(actor: Actor) -> QuerySet[Any]:
    """The people (not API keys' service users) ``actor`` may see and manage."""
    people = get_user_model().objects.exclude(username__startswith=SERVICE_USER_PREFIX)
    limit = _admin_access(actor)
    if limit is not None and limit.catalogs is not None:
        people = people.filter(
            catalog_access__isnull=False,
            catalog_access__catalogs__contained_by=list(limit.catalogs),
        )
    return people.order_by("username")


def get_person_for_user(actor: Actor, pk: int) -> Any:
    """The person if ``actor`` may manage them, else 404 (never a hint)."""
    person = people_visible_to(actor).filter(pk=pk).first()
    if person is None:
        raise Http404("person: no such person")
    return person


def person_catalogs(person: Any) -> list[str] | None:
    """The person's catalog limit; None: every catalog."""
    row = UserCatalogAccess.objects.filter(user_id=person.pk).first()
    return None if row is None else list(row.catalogs)


def create_person(
    username: str,
    *,
    groups: list[str],
    catalogs: list[str] | None,
    actor: Actor,
    via: str = "service",
    request_id: uuid.UUID | None = None,
) -> tuple[Any, str]:
    """A new person with these groups and catalogs (None: all); returns them and
    a one-time password, which is not stored anywhere but as a hash."""
    _admin_access(actor)
    asked = PersonGrant().with_groups(groups).with_catalogs(catalogs)
    Manager(actor).refuse(asked)
    _check_catalogs(catalogs)
    rows = _groups(groups)
    password = secrets.token_urlsafe(15)
    with access_changes(actor=actor, via=via, request_id=request_id):
        person = get_user_model()(username=username)
        person.set_password(password)
        person.full_clean()
        person.save()
        person.groups.set(rows)
        if catalogs is not None:
            UserCatalogAccess.objects.create(user=person, catalogs=catalogs)
    return person, password


def update_person(
    person: Any,
    *,
    groups: list[str],
    catalogs: list[str] | None,
    actor: Actor,
    via: str = "service",
    request_id: uuid.UUID | None = None,
) -> Any:
    """Set the person's groups and catalog limit (None: all catalogs)."""
    limit = _admin_access(actor)
    _check_reach(limit, person)
    manager = Manager(actor)
    before = grant_of(person)
    manager.refuse(before)
    manager.refuse(before.with_groups(groups).with_catalogs(catalogs))
    _check_catalogs(catalogs)
    rows = _groups(groups)
    with access_changes(actor=actor, via=via, request_id=request_id):
        person.groups.set(rows)
        row = UserCatalogAccess.objects.filter(user_id=person.pk).first()
        if catalogs is None and row is not None:
            row.delete()
        elif catalogs is not None and row is None:
            UserCatalogAccess.objects.create(user=person, catalogs=catalogs)
        elif row is not None and catalogs is not None and row.catalogs != catalogs:
            row.catalogs = catalogs
            row.save(update_fields=["catalogs"])
    return person


def set_person_active(
    person: Any,
    active: bool,
    *,
    actor: Actor,
    via: str = "service",
    request_id: uuid.UUID | None = None,
) -> Any:
    """Deactivate (or reactivate) a person: a deactivated person cannot sign in."""
    limit = _admin_access(actor)
    _check_reach(limit, person)
    Manager(actor).refuse(grant_of(person))
    if not active and actor is not None and person.pk == getattr(actor, "pk", None):
        raise ValidationError({"is_active": "you cannot deactivate yourself"})
    with access_changes(actor=actor, via=via, request_id=request_id):
        if person.is_active != active:
            person.is_active = active
            person.save(update_fields=["is_active"])
    return person


def _admin_access(actor: Actor) -> Access | None:
    """The actor's access (None: the system, unlimited); only admins manage people."""
    if actor is None:
        return None
    access = access_for(actor)
    if not access.is_admin:
        raise PermissionDenied("managing people needs the admin scope")
    return access


def _check_reach(limit: Access | None, person: Any) -> None:
    """The person must be within the actor's catalogs (else not even visible)."""
    if limit is None or limit.catalogs is None:
        return
    held = person_catalogs(person)
    if held is None or not set(held) <= set(limit.catalogs):
        raise Http404("person: no such person")


def _check_catalogs(catalogs: list[str] | None) -> None:
    """Catalogs that exist and at least one (whether the caller may give them is
    ``Manager.refusal``'s, asked first, so unknown and unheld read the same)."""
    if catalogs is None:
        return
    if not catalogs:
        raise ValidationError(
            {"catalogs": "name at least one catalog, or choose all catalogs"}
        )
    known = existing_catalogs(catalogs)
    unknown = [slug for slug in catalogs if slug not in known]
    if unknown:
        raise ValidationError({"catalogs": f"no catalog {', '.join(unknown)}"})


def _groups(names: list[str]) -> list[Group]:
    rows = list(Group.objects.filter(name__in=names))
    unknown = sorted(set(names) - {group.name for group in rows})
    if unknown:
        raise ValidationError({"groups": f"no group {', '.join(unknown)}"})
    return rows


def group_choices() -> list[str]:
    """The groups a person may be given: admin, curator, compliance and approver
    first, then the role groups."""
    names = list(Group.objects.order_by("name").values_list("name", flat=True))
    standard = [name for name in STANDARD_GROUPS if name in names]
    return standard + [name for name in names if name not in STANDARD_GROUPS]
