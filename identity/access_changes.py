"""Every change to what a person may see or do is one ``access_changed`` audit event.

The People services, the Django admin, ``createsuperuser`` and any ORM call all
write a person's flags, groups, permissions and catalog limit, and only the services
record what they do. So this module listens to those models' signals, whatever path
wrote them, and records the change in the transaction that made it: inside an
``access_changes(actor=..., via=...)`` block one event per person or group changed,
with the block's actor; anywhere else one per write, actor "system".
The rules, and what is not caught: docs/explanation/security.md, People and access.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser, Group, Permission
from django.db import transaction
from django.db.models import Model, QuerySet
from django.db.models.signals import (
    m2m_changed,
    post_delete,
    post_save,
    pre_delete,
    pre_save,
)
from django.dispatch import receiver

from audit.actors import Actor
from audit.choices import EventType
from audit.services import record_event
from identity.access_people import Manager, Refused, grants_of, permission_names
from identity.models import UserCatalogAccess

SERVICE_USER_PREFIX = "api:"
# The flags a User row holds that decide access; a save naming none of them
# (last_login at sign-in) is not looked at.
ACCESS_FIELDS = frozenset({"is_active", "is_staff", "is_superuser", "username"})

Subject = tuple[str, int]  # ("person", user pk) or ("group", group pk)
State = dict[str, Any] | None  # None: the person or group does not exist


@dataclass
class _Scope:
    actor: Actor
    via: str
    request_id: uuid.UUID | None = None
    before: dict[Subject, State] = field(default_factory=dict)
    # What each subject held before, for the rule that nobody manages a person
    # with more than they have (identity.access_people); only with an actor.
    held: dict[Subject, Any] = field(default_factory=dict)


_scope: ContextVar[_Scope | None] = ContextVar("quiver_access_scope", default=None)
_pending: ContextVar[dict[Subject, State] | None] = ContextVar(
    "quiver_access_pending", default=None
)


@contextmanager
def access_changes(
    *, actor: Actor, via: str, request_id: uuid.UUID | None = None
) -> Iterator[None]:
    """A transaction in which every access change becomes one event per person or
    group, by ``actor``, of the request ``request_id``; nested blocks join the
    outermost one."""
    if _scope.get() is not None:
        yield
        return
    with transaction.atomic():
        scope = _Scope(actor=actor, via=via, request_id=request_id)
        token = _scope.set(scope)
        try:
            yield
            _flush(scope)
        finally:
            _scope.reset(token)


def person_state(user: AbstractUser) -> dict[str, Any]:
    """What decides a person's access (identity.access), as plain data; catalogs
    ``"*"`` when the person has no limit (no ``UserCatalogAccess`` row)."""
    row = UserCatalogAccess.objects.filter(user_id=user.pk).first()
    perms = user.user_permissions.values_list("content_type__app_label", "codename")
    return {
        "username": user.get_username(),
        "is_active": user.is_active,
        "is_staff": user.is_staff,
        "is_superuser": user.is_superuser,
        "groups": sorted(user.groups.values_list("name", flat=True)),
        "permissions": sorted(f"{app}.{code}" for app, code in perms),
        "catalogs": "*" if row is None else list(row.catalogs),
    }


def group_state(group: Group) -> dict[str, Any]:
    """A group's name (a role), its permissions and who holds it."""
    perms = group.permissions.values_list("content_type__app_label", "codename")
    return {
        "name": group.name,
        "permissions": sorted(f"{app}.{code}" for app, code in perms),
        "members": sorted(group.user_set.values_list("username", flat=True)),
    }


def _load(subject: Subject) -> State:
    kind, pk = subject
    if kind == "person":
        user = get_user_model().objects.filter(pk=pk).first()
        return None if user is None else person_state(user)
    group = Group.objects.filter(pk=pk).first()
    return None if group is None else group_state(group)


def _begin(subject: Subject, *, new: bool = False) -> None:
    """Note the subject's state before a change (once per block or signal pair);
    ``new``: it did not exist before."""
    scope = _scope.get()
    store = scope.before if scope is not None else _pending_store()
    # Outside a block a pair is a fresh look: a save that failed left its note.
    if scope is None or subject not in store:
        store[subject] = None if new else _load(subject)
        if scope is not None and scope.actor is not None and not new:
            scope.held[subject] = _holdings(subject)


def _end(subject: Subject) -> None:
    """Outside a block, record the change the signal pair made, now."""
    if _scope.get() is not None:
        return
    store = _pending_store()
    if subject in store:
        _record(subject, store.pop(subject), actor=None, via="orm")


def _pending_store() -> dict[Subject, State]:
    store = _pending.get()
    if store is None:
        store = {}
        _pending.set(store)
    return store


def _flush(scope: _Scope) -> None:
    changed = {
        subject: after
        for subject, before in scope.before.items()
        if (after := _load(subject)) != before
    }
    if scope.actor is not None:
        _refuse_bigger(scope, changed)
    for subject, after in changed.items():
        _record(
            subject,
            scope.before[subject],
            actor=scope.actor,
            via=scope.via,
            after=after,
            request_id=scope.request_id,
        )


def _holdings(subject: Subject) -> Any:
    """A person's grant, or a group's (permissions, member pks); None: gone."""
    kind, pk = subject
    if kind == "person":
        return grants_of([pk]).get(pk)
    group = Group.objects.filter(pk=pk).first()
    if group is None:
        return None
    perms = permission_names(group.permissions.all())
    return perms, list(group.user_set.values_list("pk", flat=True))


def _refuse_bigger(scope: _Scope, changed: dict[Subject, State]) -> None:
    """The net under every write a block makes on someone's behalf (the services
    and the Django admin check first, with clearer answers): a person or group
    the actor does not hold as much as, before or after, rolls the block back."""
    if not changed:
        return
    manager = Manager(scope.actor)
    for subject in changed:
        for held in (scope.held.get(subject), _holdings(subject)):
            if held is None:
                continue
            problem = (
                manager.refusal(held)
                if subject[0] == "person"
                else manager.group_refusal(*held)
            )
            if problem:
                raise Refused.of(problem)


_UNREAD: Any = object()


def _record(
    subject: Subject,
    before: State,
    *,
    actor: Actor,
    via: str,
    after: Any = _UNREAD,
    request_id: uuid.UUID | None = None,
) -> None:
    if after is _UNREAD:
        after = _load(subject)
    if before == after:
        return
    kind, pk = subject
    name = (after or before or {}).get("username" if kind == "person" else "name")
    what = "created" if before is None else "deleted" if after is None else "changed"
    key = "user_id" if kind == "person" else "group_id"
    record_event(
        EventType.ACCESS_CHANGED,
        actor=actor,
        request_id=request_id,
        summary=f"{kind} {name!r} {what} ({via})",
        input={"subject": kind, key: pk, "via": via, "before": before},
        output={"subject": kind, key: pk, "after": after},
    )


def _is_person(user: Any) -> bool:  # a signal's instance: a user for a person's change
    return not str(user.get_username()).startswith(SERVICE_USER_PREFIX)


def _person(pk: int) -> Subject:
    return ("person", pk)


def _group(pk: int) -> Subject:
    return ("group", pk)


def _people_among(pks: list[int]) -> list[int]:
    people = get_user_model().objects.filter(pk__in=pks)
    people = people.exclude(username__startswith=SERVICE_USER_PREFIX)
    return sorted(people.values_list("pk", flat=True))


def _from_user_deletion(origin: Any) -> bool:
    """A catalog limit deleted because its person is: the person's event says it."""
    user_model = get_user_model()
    if isinstance(origin, QuerySet):
        return bool(origin.model is user_model)
    return isinstance(origin, user_model)


# The receivers. Each "pre" notes the state before; its "post" records it (outside
# an ``access_changes`` block) or leaves it to the block's end.

User = get_user_model()


@receiver(pre_save, sender=User, dispatch_uid="quiver_access_user_pre_save")
def _user_saving(sender: Any, instance: Any, **kwargs: Any) -> None:
    fields = kwargs.get("update_fields")
    if instance._state.adding or not _is_person(instance):
        return
    if fields is None or ACCESS_FIELDS & set(fields):
        _begin(_person(instance.pk))


@receiver(post_save, sender=User, dispatch_uid="quiver_access_user_post_save")
def _user_saved(sender: Any, instance: Any, created: bool, **kwargs: Any) -> None:
    if not _is_person(instance):
        return
    if created:
        _begin(_person(instance.pk), new=True)
    _end(_person(instance.pk))


@receiver(pre_delete, sender=User, dispatch_uid="quiver_access_user_pre_delete")
def _user_deleting(sender: Any, instance: Any, **kwargs: Any) -> None:
    if _is_person(instance):
        _begin(_person(instance.pk))


@receiver(post_delete, sender=User, dispatch_uid="quiver_access_user_post_delete")
def _user_deleted(sender: Any, instance: Any, **kwargs: Any) -> None:
    if _is_person(instance):
        _end(_person(instance.pk))


@receiver(pre_save, sender=Group, dispatch_uid="quiver_access_group_pre_save")
def _group_saving(sender: Any, instance: Group, **kwargs: Any) -> None:
    if not instance._state.adding:
        _begin(_group(instance.pk))


@receiver(post_save, sender=Group, dispatch_uid="quiver_access_group_post_save")
def _group_saved(sender: Any, instance: Group, created: bool, **kwargs: Any) -> None:
    if not created:
        _end(_group(instance.pk))


@receiver(pre_delete, sender=Group, dispatch_uid="quiver_access_group_pre_delete")
def _group_deleting(sender: Any, instance: Group, **kwargs: Any) -> None:
    _begin(_group(instance.pk))


@receiver(post_delete, sender=Group, dispatch_uid="quiver_access_group_post_delete")
def _group_deleted(sender: Any, instance: Group, **kwargs: Any) -> None:
    _end(_group(instance.pk))


@receiver(pre_delete, sender=Permission, dispatch_uid="quiver_access_perm_pre_delete")
def _permission_deleting(sender: Any, instance: Permission, **kwargs: Any) -> None:
    groups = list(instance.group_set.values_list("pk", flat=True))
    people = _people_among(list(instance.user_set.values_list("pk", flat=True)))
    subjects = [_group(pk) for pk in groups] + [_person(pk) for pk in people]
    instance._quiver_subjects = subjects  # type: ignore[attr-defined]
    for subject in subjects:
        _begin(subject)


@receiver(post_delete, sender=Permission, dispatch_uid="quiver_access_perm_post_delete")
def _permission_deleted(sender: Any, instance: Permission, **kwargs: Any) -> None:
    for subject in getattr(instance, "_quiver_subjects", []):
        _end(subject)


@receiver(pre_save, sender=UserCatalogAccess, dispatch_uid="quiver_access_uca_pre")
@receiver(pre_delete, sender=UserCatalogAccess, dispatch_uid="quiver_access_uca_pd")
def _limit_changing(sender: Any, instance: UserCatalogAccess, **kwargs: Any) -> None:
    if not _from_user_deletion(kwargs.get("origin")):
        _begin(_person(instance.user_id))


@receiver(post_save, sender=UserCatalogAccess, dispatch_uid="quiver_access_uca_post")
@receiver(post_delete, sender=UserCatalogAccess, dispatch_uid="quiver_access_uca_del")
def _limit_changed(sender: Any, instance: UserCatalogAccess, **kwargs: Any) -> None:
    if not _from_user_deletion(kwargs.get("origin")):
        _end(_person(instance.user_id))


def _m2m(instance: Model, action: str, reverse: bool, pk_set: Any, kind: str) -> None:
    """One many-to-many change: ``kind`` is who it changes ("person" for a user's
    groups and permissions, "group" for a group's permissions); from the other side
    (``reverse``) the changed ones are ``pk_set``, or every holder on a clear."""
    if action.startswith("pre_"):
        if not reverse:
            pks = [instance.pk]
            if kind == "person" and not _is_person(instance):
                pks = []
        else:
            if action == "pre_clear":
                holders = instance.user_set if kind == "person" else instance.group_set  # type: ignore[attr-defined]
                pks = list(holders.values_list("pk", flat=True))
            else:
                pks = list(pk_set or ())
            pks = _people_among(pks) if kind == "person" else pks
        instance._quiver_m2m = pks  # type: ignore[attr-defined]
        for pk in pks:
            _begin((kind, pk))
    else:
        for pk in getattr(instance, "_quiver_m2m", []):
            _end((kind, pk))


@receiver(m2m_changed, sender=User.groups.through, dispatch_uid="quiver_access_groups")
@receiver(
    m2m_changed,
    sender=User.user_permissions.through,
    dispatch_uid="quiver_access_user_perms",
)
def _person_links_changed(
    sender: Any, instance: Model, action: str, reverse: bool, pk_set: Any, **kw: Any
) -> None:
    _m2m(instance, action, reverse, pk_set, "person")


@receiver(
    m2m_changed, sender=Group.permissions.through, dispatch_uid="quiver_access_perms"
)
def _group_permissions_changed(
    sender: Any, instance: Model, action: str, reverse: bool, pk_set: Any, **kw: Any
) -> None:
    _m2m(instance, action, reverse, pk_set, "group")
