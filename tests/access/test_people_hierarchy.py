"""Nobody manages a person with more than they have (identity.access_people): an
admin who is not a superuser never deactivates, edits or reactivates a superuser,
nor anyone holding a permission, staff flag or catalogs they lack, and never
gives more than they hold; on the People page (403 naming the rule, no buttons),
in the services, and under every write an ``access_changes`` block makes."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.test import Client
from rest_framework.test import APIClient

from audit.models import AuditEvent
from catalog.services import create_catalog
from identity.access_changes import access_changes
from identity.access_people import Refused
from identity.models import UserCatalogAccess
from identity.services import create_api_client
from identity.services.people import create_person, set_person_active, update_person
from tests.factories import make_user

pytestmark = pytest.mark.django_db

User = get_user_model()


@pytest.fixture(autouse=True)
def groups(db: None) -> None:
    for name in ("admin", "curator", "compliance", "support"):
        Group.objects.get_or_create(name=name)
    ops = Group.objects.get_or_create(name="ops")[0]
    ops.permissions.add(perm("auth", "delete_user"))
    create_catalog("other", "Other", "", actor=None)


def perm(app: str, codename: str) -> Permission:
    return Permission.objects.get(content_type__app_label=app, codename=codename)


@pytest.fixture
def root() -> Any:
    return make_user("root", superuser=True)


@pytest.fixture
def boss() -> Any:
    """An admin by the admin group, every catalog, not a superuser."""
    return make_user("boss", groups=("admin",))


@pytest.fixture
def as_boss(client: Client, boss: Any) -> Client:
    client.force_login(boss)
    return client


def access_events() -> int:
    return AuditEvent.objects.filter(event_type="access_changed").count()


def root_key(root: Any) -> APIClient:
    """An API key the superuser made: it dies if they are deactivated."""
    _client, key = create_api_client("root-bot", "admin", catalogs="*", actor=root)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return api


def test_an_admin_who_is_not_a_superuser_cannot_deactivate_a_superuser(as_boss, root):
    key = root_key(root)
    events = access_events()

    answer = as_boss.post(f"/people/{root.pk}/active/", {"active": "0"})

    assert answer.status_code == 403
    assert "is_superuser: only a superuser manages a superuser" in (
        answer.content.decode()
    )
    assert User.objects.get(pk=root.pk).is_active
    assert access_events() == events
    assert key.get("/api/v1/catalogs/").status_code == 200


def test_nor_change_a_superusers_groups_or_catalogs(as_boss, root):
    page = as_boss.get(f"/people/{root.pk}/")
    answer = as_boss.post(
        f"/people/{root.pk}/", {"groups": ["support"], "catalogs": "other"}
    )

    assert page.status_code == 403 and "is_superuser" in page.content.decode()
    assert answer.status_code == 403
    assert "is_superuser" in answer.content.decode()
    assert list(root.groups.all()) == []
    assert not UserCatalogAccess.objects.filter(user=root).exists()


def test_nor_reactivate_a_deactivated_superuser(as_boss, root):
    User.objects.filter(pk=root.pk).update(is_active=False)

    answer = as_boss.post(f"/people/{root.pk}/active/", {"active": "1"})

    assert answer.status_code == 403
    assert not User.objects.get(pk=root.pk).is_active


def test_the_list_offers_no_buttons_on_a_bigger_person_and_says_why(as_boss, root):
    peer = make_user("peer", groups=("admin",))

    page = as_boss.get("/people/").content.decode()

    root_row = page.split(f'data-person="{root.username}"')[1].split("</tr>")[0]
    peer_row = page.split(f'data-person="{peer.username}"')[1].split("</tr>")[0]
    assert "Holds more than you" in root_row
    assert f"/people/{root.pk}/" not in root_row
    assert f"/people/{peer.pk}/active/" in peer_row


def test_an_admin_still_manages_an_equal_admin_and_smaller_people(as_boss):
    peer = make_user("peer", groups=("admin",))
    pat = make_user("pat", groups=("support",))

    assert as_boss.post(f"/people/{peer.pk}/active/", {"active": "0"}).status_code == (
        302
    )
    answer = as_boss.post(
        f"/people/{pat.pk}/", {"groups": ["curator"], "all_catalogs": "on"}
    )

    assert answer.status_code == 302
    assert not User.objects.get(pk=peer.pk).is_active
    assert [g.name for g in pat.groups.all()] == ["curator"]


def test_an_admin_never_gives_a_group_carrying_a_permission_they_lack(as_boss):
    pat = make_user("pat")

    made = as_boss.post(
        "/people/", {"username": "dana", "groups": ["ops"], "all_catalogs": "on"}
    )
    edited = as_boss.post(
        f"/people/{pat.pk}/", {"groups": ["ops"], "all_catalogs": "on"}
    )

    for answer in (made, edited):
        assert answer.status_code == 403
        assert (
            "groups: &#x27;ops&#x27; carries the permission" in answer.content.decode()
        )
    assert not User.objects.filter(username="dana").exists()
    assert list(pat.groups.all()) == []


def test_nor_manages_someone_holding_a_permission_they_lack(as_boss):
    holder = make_user("holder", groups=("ops",))
    direct = make_user("direct")
    direct.user_permissions.add(perm("auth", "change_group"))

    for person, field in ((holder, "groups"), (direct, "user_permissions")):
        answer = as_boss.post(f"/people/{person.pk}/active/", {"active": "0"})
        assert answer.status_code == 403, person
        assert f"{field}:" in answer.content.decode()
        assert User.objects.get(pk=person.pk).is_active


def test_nor_a_staff_member_unless_staff(as_boss):
    staff = make_user("staffer")
    User.objects.filter(pk=staff.pk).update(is_staff=True)

    answer = as_boss.post(f"/people/{staff.pk}/active/", {"active": "0"})

    assert answer.status_code == 403 and "is_staff" in answer.content.decode()


def test_a_superuser_manages_anyone(client, root):
    other = make_user("other-root", superuser=True)
    holder = make_user("holder", groups=("ops",))
    client.force_login(root)

    assert (
        client.post(f"/people/{other.pk}/active/", {"active": "0"}).status_code == 302
    )
    answer = client.post(
        f"/people/{holder.pk}/", {"groups": ["support"], "all_catalogs": "on"}
    )

    assert answer.status_code == 302
    assert not User.objects.get(pk=other.pk).is_active


def test_a_superuser_limited_to_some_catalogs_gives_only_those(root):
    UserCatalogAccess.objects.create(user=root, catalogs=["other"])

    with pytest.raises(Refused, match="all_catalogs"):
        create_person("dana", groups=[], catalogs=None, actor=root)


def test_the_services_refuse_whatever_calls_them(boss, root):
    with pytest.raises(Refused, match="is_superuser"):
        update_person(root, groups=[], catalogs=None, actor=boss)
    with pytest.raises(Refused, match="is_superuser"):
        set_person_active(root, False, actor=boss)
    with pytest.raises(Refused, match="groups: 'ops'"):
        create_person("dana", groups=["ops"], catalogs=None, actor=boss)


def test_an_admin_key_manages_no_person(root):
    key, _ = create_api_client("admin-bot", "admin", catalogs="*")
    pat = make_user("pat")

    with pytest.raises(Refused, match="person: people are managed by people"):
        set_person_active(pat, False, actor=key.user)


def test_the_system_still_manages_anyone(root):
    set_person_active(root, False, actor=None)

    assert not User.objects.get(pk=root.pk).is_active


@pytest.mark.parametrize(
    "write",
    [
        lambda root: _save(root, is_active=False),
        lambda root: root.groups.add(Group.objects.get(name="support")),
        lambda root: UserCatalogAccess.objects.create(user=root, catalogs=["other"]),
        lambda root: root.delete(),
        lambda root: Group.objects.get(name="ops").user_set.add(make_user("newcomer")),
        lambda root: _save(make_user("pat"), is_superuser=True),
    ],
    ids=[
        "deactivate",
        "add a group",
        "set a limit",
        "delete",
        "give a bigger group",
        "make a superuser",
    ],
)
def test_the_net_rolls_back_any_write_on_a_bigger_person_made_in_a_block(
    boss, root, write
):
    events = access_events()
    pk = root.pk

    with pytest.raises(Refused), access_changes(actor=boss, via="script"):
        write(root)

    root = User.objects.get(pk=pk)
    assert root.is_active and root.is_superuser
    assert list(root.groups.all()) == []
    assert not User.objects.filter(username__in=["newcomer", "pat"]).exists()
    assert access_events() == events


def _save(obj: Any, **fields: Any) -> None:
    for name, value in fields.items():
        setattr(obj, name, value)
    obj.save()
