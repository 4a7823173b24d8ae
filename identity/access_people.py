"""Who may manage which person: nobody manages a person with more than they have.

The people's counterpart of ``identity.access.key_within``: whoever changes a person
or a group must hold everything it holds, before the change and after it. Applied by
the People services, the Django admin's hooks and forms, and, as a net for every
other write, by ``identity.access_changes`` when its block ends.
The rules: docs/explanation/security.md, People and access.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.exceptions import PermissionDenied

from audit.actors import Actor
from identity.access import GROUP_SCOPES, SCOPE_COVERS, access_for
from identity.choices import ApiScope
from identity.models import UserCatalogAccess

SUPERUSER_RULE = (
    "is_superuser: only a superuser manages a superuser or makes one (a superuser "
    "holds more than any other person)"
)
STAFF_RULE = "is_staff: only staff manage a staff member or make one"
KEY_RULE = "person: people are managed by people, never by an API key"
ALL_CATALOGS_RULE = "all_catalogs: you may only give catalogs you hold yourself"


class Refused(PermissionDenied):
    """A 403 naming the field whose value the caller may not give or touch."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")

    @classmethod
    def of(cls, problem: str) -> Refused:
        """From a rule's "field: why"."""
        field, _, message = problem.partition(": ")
        return cls(field, message)


@dataclass(frozen=True)
class PersonGrant:
    """What a person holds (stored, or asked for by a change): their flags, their
    groups with the permissions each carries, their own permissions and their
    catalogs (None: every catalog). Permissions are "app_label.codename"."""

    is_superuser: bool = False
    is_staff: bool = False
    groups: Mapping[str, frozenset[str]] = field(default_factory=dict)
    own: frozenset[str] = frozenset()
    catalogs: tuple[str, ...] | None = None

    @property
    def permissions(self) -> frozenset[str]:
        return self.own.union(*self.groups.values())

    @property
    def scope(self) -> str:
        if self.is_superuser:
            return ApiScope.ADMIN.value
        return next(
            (s.value for s in GROUP_SCOPES if s.value in self.groups),
            ApiScope.AGENT.value,
        )

    def with_groups(self, names: Iterable[str]) -> PersonGrant:
        """This grant with exactly these groups (and their permissions now)."""
        return replace(self, groups=group_permissions(names))

    def with_catalogs(self, catalogs: Sequence[str] | None) -> PersonGrant:
        return replace(self, catalogs=None if catalogs is None else tuple(catalogs))


def group_permissions(names: Iterable[str]) -> dict[str, frozenset[str]]:
    """Each named group's permissions, in one query (unknown names: none)."""
    wanted = sorted(set(names))
    found: dict[str, set[str]] = {name: set() for name in wanted}
    rows = Group.objects.filter(name__in=wanted).values_list(
        "name", "permissions__content_type__app_label", "permissions__codename"
    )
    for name, app, codename in rows:
        if codename is not None:
            found[name].add(f"{app}.{codename}")
    return {name: frozenset(perms) for name, perms in found.items()}


def permission_names(permissions: Iterable[Permission]) -> frozenset[str]:
    """ "app_label.codename" of each permission (a queryset: one query)."""
    if hasattr(permissions, "values_list"):
        rows = permissions.values_list("content_type__app_label", "codename")
        return frozenset(f"{app}.{codename}" for app, codename in rows)
    return frozenset(f"{p.content_type.app_label}.{p.codename}" for p in permissions)


def grants_of(pks: Iterable[int]) -> dict[int, PersonGrant]:
    """The stored grant of each person, in five queries whatever their number."""
    pks = sorted(set(pks))
    users = get_user_model().objects.filter(pk__in=pks)
    flags = {pk: (su, staff) for pk, su, staff in users.values_list(
        "pk", "is_superuser", "is_staff"
    )}  # fmt: skip
    member: dict[int, list[str]] = defaultdict(list)
    through = get_user_model().groups.through.objects.filter(user_id__in=pks)
    for user_id, name in through.values_list("user_id", "group__name"):
        member[user_id].append(name)
    perms = group_permissions(n for names in member.values() for n in names)
    own: dict[int, set[str]] = defaultdict(set)
    rows = Permission.objects.filter(user__in=pks).values_list(
        "user__id", "content_type__app_label", "codename"
    )
    for user_id, app, codename in rows:
        own[user_id].add(f"{app}.{codename}")
    limits = dict(
        UserCatalogAccess.objects.filter(user_id__in=pks).values_list(
            "user_id", "catalogs"
        )
    )
    return {
        pk: PersonGrant(
            is_superuser=bool(superuser),
            is_staff=bool(staff),
            groups={name: perms[name] for name in member[pk]},
            own=frozenset(own[pk]),
            catalogs=_catalogs(limits, pk),
        )
        for pk, (superuser, staff) in flags.items()
    }


def _catalogs(limits: dict[int, Any], pk: int) -> tuple[str, ...] | None:
    """As identity.access reads a limit: no row, every catalog; a malformed one,
    none."""
    if pk not in limits:
        return None
    stored = limits[pk]
    return tuple(str(s) for s in stored) if isinstance(stored, list) else ()


def grant_of(person: Any) -> PersonGrant:
    """The person's stored grant; one not saved yet holds what a new row would:
    no flag, group or permission, and every catalog (no limit row yet)."""
    if getattr(person, "pk", None) is None:
        return PersonGrant()
    return grants_of([person.pk]).get(person.pk, PersonGrant())


def catalogs_problem(held: tuple[str, ...] | None, asked: Sequence[str] | None) -> str:
    """'' when catalogs ``asked`` (None: every one) are within ``held``; unknown
    and not held are the same answer, so existence does not leak."""
    if held is None:
        return ""
    if asked is None:
        return ALL_CATALOGS_RULE
    outside = [slug for slug in asked if slug not in held]
    if outside:
        return f"catalogs: not within your catalogs: {', '.join(outside)}"
    return ""


class Manager:
    """One actor's holdings, read once, to decide on any number of people."""

    def refuse(self, grant: PersonGrant) -> None:
        """Raise ``Refused`` naming the field unless the actor holds all of it."""
        problem = self.refusal(grant)
        if problem:
            raise Refused.of(problem)

    def __init__(self, actor: Actor) -> None:
        self.system = actor is None
        self.is_key = not self.system and access_for(actor).is_key
        self.mine = PersonGrant() if self.system else grant_of(actor)

    def refusal(self, grant: PersonGrant) -> str:
        """'' when the actor holds everything ``grant`` holds, else "field: why"."""
        if self.system:
            return ""
        if self.is_key:
            return KEY_RULE
        mine = self.mine
        problem = catalogs_problem(mine.catalogs, grant.catalogs)
        if problem or mine.is_superuser:
            return problem
        if grant.is_superuser:
            return SUPERUSER_RULE
        if grant.is_staff and not mine.is_staff:
            return STAFF_RULE
        if grant.scope not in SCOPE_COVERS[mine.scope]:
            return f"groups: a {mine.scope} cannot manage a {grant.scope}"
        return self._groups_problem(grant) or self._own_problem(grant)

    def _groups_problem(self, grant: PersonGrant) -> str:
        held = self.mine.permissions
        for name, perms in sorted(grant.groups.items()):
            if self.mine.scope != ApiScope.ADMIN and name not in self.mine.groups:
                return f"groups: {name!r} is not one of your groups"
            missing = sorted(perms - held)
            if missing:
                return (
                    f"groups: {name!r} carries the permission {missing[0]!r}, "
                    "which you do not hold"
                )
        return ""

    def _own_problem(self, grant: PersonGrant) -> str:
        missing = sorted(grant.own - self.mine.permissions)
        if missing:
            return f"user_permissions: {missing[0]!r} is not one of your permissions"
        return ""

    def group_refusal(self, permissions: frozenset[str], members: Iterable[int]) -> str:
        """'' when the actor may change a group carrying ``permissions`` whose
        members are ``members`` (pks), else "field: why"."""
        if self.system:
            return ""
        if self.is_key:
            return KEY_RULE
        if not self.mine.is_superuser:
            missing = sorted(permissions - self.mine.permissions)
            if missing:
                return f"permissions: {missing[0]!r} is not one of your permissions"
        users = get_user_model().objects.filter(pk__in=list(members))
        names = dict(users.values_list("pk", "username"))
        for pk, grant in sorted(grants_of(names).items()):
            problem = self.refusal(grant)
            if problem:
                return f"members: {names[pk]!r} holds more than you ({problem})"
        return ""
