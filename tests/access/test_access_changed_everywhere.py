"""Every change to what a person may see or do is exactly one ``access_changed``
event, in the transaction that made it, whatever path made it: the Django admin's
real forms, the ORM (a shell, a script), the services, management commands."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from unittest import mock

import pytest
from django.contrib.admin.models import LogEntryManager
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.management import call_command
from django.db import transaction

from audit.models import AuditEvent
from identity.models import UserCatalogAccess
from identity.services.people import create_person, set_person_active, update_person
from tests.factories import make_user

pytestmark = pytest.mark.django_db

User = get_user_model()


class World:
    """A signed-in superuser ``root``, a person ``pat`` in the role group ``support``
    limited to ``default``, and the ``curator`` group."""

    def __init__(self, client: Any) -> None:
        self.root = make_user("root", superuser=True)
        self.pat = make_user("pat", groups=("support",))
        UserCatalogAccess.objects.create(user=self.pat, catalogs=["default"])
        self.support = Group.objects.get(name="support")
        self.curator = Group.objects.get_or_create(name="curator")[0]
        self.unsafe = Permission.objects.get(codename="use_unsafe_tools")
        client.force_login(self.root)
        self.client = client
        self.mark = AuditEvent.objects.order_by("-id").values_list("id", flat=True)[0]

    def events(self) -> list[AuditEvent]:
        found = AuditEvent.objects.filter(id__gt=self.mark, event_type="access_changed")
        return list(found.order_by("id"))

    def post(self, url: str, data: dict[str, Any]) -> None:
        response = self.client.post(url, data)
        assert response.status_code == 302, response.content.decode()[:3000]

    def user_form(self, **changes: Any) -> dict[str, Any]:
        data: dict[str, Any] = {
            "username": "pat",
            "is_active": "on",
            "groups": [self.support.pk],
            "date_joined_0": "2026-01-01",
            "date_joined_1": "00:00:00",
            "initial-date_joined_0": "2026-01-01",
            "initial-date_joined_1": "00:00:00",
        }
        data.update(changes)
        return {key: value for key, value in data.items() if value is not None}


def admin_user_change(**changes: Any) -> Callable[[World], None]:
    def run(w: World) -> None:
        w.post(f"/admin/auth/user/{w.pat.pk}/change/", w.user_form(**changes))

    return run


def admin_group_change(name: str, unsafe: bool) -> Callable[[World], None]:
    def run(w: World) -> None:
        perms = [w.unsafe.pk] if unsafe else []
        url = f"/admin/auth/group/{w.support.pk}/change/"
        w.post(url, {"name": name, "permissions": perms})

    return run


ADMIN_PATHS: dict[str, Callable[[World], object]] = {
    "admin grants a group use_unsafe_tools": admin_group_change("support", True),
    "admin renames a group": admin_group_change("finance", False),
    "admin takes use_unsafe_tools from the admin group": lambda w: w.post(
        f"/admin/auth/group/{Group.objects.get(name='admin').pk}/change/",
        {"name": "admin", "permissions": []},
    ),
    "admin deletes a group": lambda w: w.post(
        f"/admin/auth/group/{w.support.pk}/delete/", {"post": "yes"}
    ),
    "admin deletes a person": lambda w: w.post(
        f"/admin/auth/user/{w.pat.pk}/delete/", {"post": "yes"}
    ),
    "admin deletes a person from the list": lambda w: w.post(
        "/admin/auth/user/",
        {"action": "delete_selected", "_selected_action": [w.pat.pk], "post": "yes"},
    ),
    "admin makes a person superuser": admin_user_change(is_superuser="on"),
    "admin makes a person staff": admin_user_change(is_staff="on"),
    "admin deactivates a person": admin_user_change(is_active=None),
    "admin changes a catalog limit": lambda w: w.post(
        f"/admin/identity/usercatalogaccess/{w.pat.catalog_access.pk}/change/",
        {"user": w.pat.pk, "catalogs": '["default", "other"]'},
    ),
    "admin empties a catalog limit": lambda w: w.post(
        f"/admin/identity/usercatalogaccess/{w.pat.catalog_access.pk}/change/",
        {"user": w.pat.pk, "catalogs": "[]"},
    ),
    "admin removes a catalog limit": lambda w: w.post(
        f"/admin/identity/usercatalogaccess/{w.pat.catalog_access.pk}/delete/",
        {"post": "yes"},
    ),
    "admin adds a person": lambda w: w.post(
        "/admin/auth/user/add/",
        {
            "username": "newbie",
            "usable_password": "true",
            "password1": "a-Long-pass-9876",
            "password2": "a-Long-pass-9876",
        },
    ),
}


def _grant_permission_form(w: World) -> None:
    url = f"/admin/auth/user/{w.pat.pk}/change/"
    w.post(url, w.user_form(user_permissions=[w.unsafe.pk]))


def _add_group_form(w: World) -> None:
    url = f"/admin/auth/user/{w.pat.pk}/change/"
    w.post(url, w.user_form(groups=[w.support.pk, w.curator.pk]))


ADMIN_PATHS["admin adds a person to a group"] = _add_group_form
ADMIN_PATHS["admin removes a person's groups"] = admin_user_change(groups=[])
ADMIN_PATHS["admin grants a person a permission"] = _grant_permission_form


def _save(obj: Any, **fields: Any) -> None:
    for name, value in fields.items():
        setattr(obj, name, value)
    obj.save()


def _deactivate(person: Any) -> None:
    person.is_active = False
    person.save(update_fields=["is_active"])


def _rename(w: World) -> None:
    _save(w.support, name="finance")


def _limit(w: World, catalogs: list[str]) -> None:
    _save(UserCatalogAccess.objects.get(user=w.pat), catalogs=catalogs)


ORM_PATHS: dict[str, Callable[[World], object]] = {
    "a group gets a permission": lambda w: w.support.permissions.add(w.unsafe),
    "a permission gets a group": lambda w: w.unsafe.group_set.add(w.support),
    "a group loses its permissions": lambda w: Group.objects.get(
        name="admin"
    ).permissions.clear(),
    "a permission loses its groups": lambda w: w.unsafe.group_set.clear(),
    "a group is renamed": _rename,
    "a group is deleted": lambda w: w.support.delete(),
    "groups are deleted by a queryset": lambda w: Group.objects.filter(
        name="support"
    ).delete(),
    "the unsafe permission is deleted": lambda w: w.unsafe.delete(),
    "a person is deleted": lambda w: w.pat.delete(),
    "people are deleted by a queryset": lambda w: User.objects.filter(
        pk=w.pat.pk
    ).delete(),
    "a person becomes superuser": lambda w: _save(w.pat, is_superuser=True),
    "a person becomes staff": lambda w: _save(w.pat, is_staff=True),
    "a person is deactivated by update_fields": lambda w: _deactivate(w.pat),
    "a person joins a group": lambda w: w.pat.groups.add(w.curator),
    "a group gets a member": lambda w: w.curator.user_set.add(w.pat),
    "a person leaves a group": lambda w: w.pat.groups.remove(w.support),
    "a person's groups are cleared": lambda w: w.pat.groups.clear(),
    "a group's members are cleared": lambda w: w.support.user_set.clear(),
    "a person gets a permission": lambda w: w.pat.user_permissions.add(w.unsafe),
    "a catalog limit changes": lambda w: _limit(w, ["default", "other"]),
    "a catalog limit is emptied": lambda w: _limit(w, []),
    "a catalog limit is removed": lambda w: w.pat.catalog_access.delete(),
    "a person is created": lambda w: User.objects.create_user("newbie"),
    "createsuperuser": lambda w: call_command(
        "createsuperuser", "--noinput", "--username", "boss", "--email", "b@x.org"
    ),
    "create_person": lambda w: call_command(
        "create_person", "newbie", "--group", "curator", stdout=mock.MagicMock()
    ),
}

SERVICE_PATHS: dict[str, Callable[[World], object]] = {
    "update_person changes groups and catalogs": lambda w: update_person(
        w.pat, groups=["curator"], catalogs=None, actor=w.root
    ),
    "set_person_active deactivates": lambda w: set_person_active(
        w.pat, False, actor=w.root
    ),
    "create_person makes a person": lambda w: create_person(
        "newbie", groups=["compliance"], catalogs=["default"], actor=w.root
    ),
}

EVERY_PATH = {**ADMIN_PATHS, **ORM_PATHS, **SERVICE_PATHS}


@pytest.mark.parametrize("path", list(EVERY_PATH))
def test_every_path_leaves_exactly_one_access_changed_event(client, path):
    world = World(client)
    Group.objects.get_or_create(name="compliance")
    EVERY_PATH[path](world)
    events = world.events()
    assert len(events) == 1, [e.summary for e in events]
    event = events[0]
    assert event.input["before"] != event.output["after"]
    by_root = path in ADMIN_PATHS or path in SERVICE_PATHS
    assert event.actor_name == ("root" if by_root else "system")


@pytest.mark.parametrize("path", [*ORM_PATHS, *SERVICE_PATHS])
def test_a_rolled_back_change_leaves_no_event(client, path):
    world = World(client)
    Group.objects.get_or_create(name="compliance")
    with pytest.raises(RuntimeError), transaction.atomic():
        EVERY_PATH[path](world)
        assert len(world.events()) == 1  # written in the change's transaction
        raise RuntimeError("the transaction fails after the change")
    assert world.events() == []


@pytest.mark.parametrize("path", list(ADMIN_PATHS))
def test_an_admin_change_that_fails_leaves_no_event(client, path):
    world = World(client)
    failing = mock.patch.object(
        LogEntryManager, "log_actions", side_effect=RuntimeError("log failed")
    )
    with failing, pytest.raises(RuntimeError):
        ADMIN_PATHS[path](world)
    assert world.events() == []
    assert User.objects.filter(username="pat", is_superuser=False).exists()
    assert Group.objects.filter(name="support").exists()


def test_granting_a_group_use_unsafe_tools_in_the_admin_says_what_changed(client):
    world = World(client)
    ADMIN_PATHS["admin grants a group use_unsafe_tools"](world)
    (event,) = world.events()
    assert event.input["subject"] == "group"
    assert event.input["via"] == "admin"
    assert event.input["before"]["permissions"] == []
    assert event.output["after"]["permissions"] == ["catalog.use_unsafe_tools"]
    assert event.output["after"]["members"] == ["pat"]


def test_renaming_a_group_names_the_old_and_new_name_and_its_members(client):
    world = World(client)
    ADMIN_PATHS["admin renames a group"](world)
    (event,) = world.events()
    assert event.input["before"]["name"] == "support"
    assert event.output["after"]["name"] == "finance"
    assert event.output["after"]["members"] == ["pat"]


def test_deleting_a_person_records_what_they_held(client):
    world = World(client)
    ADMIN_PATHS["admin deletes a person"](world)
    (event,) = world.events()
    assert event.input["before"]["groups"] == ["support"]
    assert event.input["before"]["catalogs"] == ["default"]
    assert event.output["after"] is None
    assert event.input["user_id"] == world.pat.pk


def test_a_person_without_a_limit_reads_all_catalogs_in_the_event(client):
    world = World(client)
    ADMIN_PATHS["admin removes a catalog limit"](world)
    (event,) = world.events()
    assert event.input["before"]["catalogs"] == ["default"]
    assert event.output["after"]["catalogs"] == "*"


def test_saving_a_form_that_changes_nothing_records_nothing(client):
    world = World(client)
    admin_user_change()(world)
    admin_group_change("support", False)(world)
    assert world.events() == []


def test_signing_in_is_not_an_access_change(client):
    world = World(client)
    assert client.login(username="pat", password="pw-12345678")
    assert world.events() == []


def test_an_api_keys_service_user_is_not_a_person(client):
    from identity.services.clients import create_api_client

    world = World(client)
    create_api_client("bot", "agent", catalogs="*", actor=None)
    assert world.events() == []
