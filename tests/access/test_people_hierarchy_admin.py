"""The Django admin keeps the people's hierarchy too (identity.access_people): a
staff member who is not a superuser, even with Django's user and group
permissions, never changes, deletes or sets the password of a bigger person,
never makes anyone (themselves included) bigger than they are, and never edits a
group carrying more than they hold; refusals are 403s naming the rule."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.test import Client

from audit.models import AuditEvent
from identity.models import UserCatalogAccess
from tests.factories import make_user

pytestmark = pytest.mark.django_db

User = get_user_model()
ADMIN_PERMS = [
    ("auth", f"{verb}_{model}")
    for verb in ("add", "change", "delete", "view")
    for model in ("user", "group")
] + [
    ("identity", f"{verb}_usercatalogaccess")
    for verb in ("add", "change", "delete", "view")
]


def perm(app: str, codename: str) -> Permission:
    return Permission.objects.get(content_type__app_label=app, codename=codename)


@pytest.fixture
def root() -> Any:
    return make_user("root", superuser=True)


@pytest.fixture
def clerk() -> Any:
    """Staff in the admin group with Django's user, group and limit permissions,
    every catalog, not a superuser."""
    person = make_user("clerk", groups=("admin",))
    person.is_staff = True
    person.save(update_fields=["is_staff"])
    person.user_permissions.add(*(perm(app, code) for app, code in ADMIN_PERMS))
    return person


@pytest.fixture
def pat() -> Any:
    return make_user("pat", groups=("support",))


@pytest.fixture
def vault() -> Group:
    """A group carrying a permission the clerk does not hold."""
    group = Group.objects.create(name="vault")
    group.permissions.add(perm("auth", "delete_permission"))
    return group


@pytest.fixture
def as_clerk(client: Client, clerk: Any) -> Client:
    client.force_login(clerk)
    return client


def events() -> int:
    return AuditEvent.objects.filter(event_type="access_changed").count()


def user_form(person: Any, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "username": person.username,
        "is_active": "on",
        "groups": list(person.groups.values_list("pk", flat=True)),
        "date_joined_0": "2026-01-01",
        "date_joined_1": "00:00:00",
        "initial-date_joined_0": "2026-01-01",
        "initial-date_joined_1": "00:00:00",
    }
    if person.is_superuser:
        data["is_superuser"] = "on"
    if person.is_staff:
        data["is_staff"] = "on"
    data.update(changes)
    return {key: value for key, value in data.items() if value is not None}


def change_url(person: Any) -> str:
    return f"/admin/auth/user/{person.pk}/change/"


def test_a_clerk_cannot_change_a_superuser_and_the_refusal_names_the_rule(
    as_clerk, root
):
    before = events()

    answer = as_clerk.post(change_url(root), user_form(root, is_active=None))

    assert answer.status_code == 403
    assert "is_superuser: only a superuser manages a superuser" in (
        answer.content.decode()
    )
    assert User.objects.get(pk=root.pk).is_active
    assert events() == before


def test_the_superuser_stays_readable_but_offers_no_save(as_clerk, root):
    page = as_clerk.get(change_url(root))

    assert page.status_code == 200
    assert 'name="_save"' not in page.content.decode()


def test_a_clerk_cannot_delete_a_superuser_by_page_or_list_action(as_clerk, root):
    url = f"/admin/auth/user/{root.pk}/delete/"
    action = {"action": "delete_selected", "_selected_action": [root.pk], "post": "yes"}

    assert as_clerk.get(url).status_code == 403
    assert as_clerk.post(url, {"post": "yes"}).status_code == 403
    assert as_clerk.post("/admin/auth/user/", action).status_code == 403
    assert User.objects.filter(pk=root.pk).exists()


def test_a_clerk_cannot_set_a_superusers_password(as_clerk, root):
    url = f"/admin/auth/user/{root.pk}/password/"
    body = {"password1": "a-Long-pass-9876", "password2": "a-Long-pass-9876"}

    answer = as_clerk.post(url, {**body, "usable_password": "true"})

    assert answer.status_code == 403
    assert "is_superuser" in answer.content.decode()
    assert User.objects.get(pk=root.pk).check_password("pw-12345678")


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"is_superuser": "on"}, "is_superuser"),
        ({"groups": "vault"}, "groups"),
        ({"user_permissions": "delete_permission"}, "user_permissions"),
    ],
    ids=["superuser", "a bigger group", "a permission not held"],
)
def test_a_clerk_never_makes_a_person_bigger_than_themselves(
    as_clerk, pat, vault, changes, field
):
    if changes.get("groups") == "vault":
        changes = {"groups": [vault.pk]}
    if changes.get("user_permissions"):
        changes = {"user_permissions": [perm("auth", "delete_permission").pk]}
    before = events()

    answer = as_clerk.post(change_url(pat), user_form(pat, **changes))

    assert answer.status_code == 403
    assert f"{field}: " in answer.content.decode()
    pat = User.objects.get(pk=pat.pk)
    assert not pat.is_superuser
    assert [g.name for g in pat.groups.all()] == ["support"]
    assert not pat.user_permissions.exists()
    assert events() == before


def test_nor_themselves(as_clerk, clerk):
    answer = as_clerk.post(change_url(clerk), user_form(clerk, is_superuser="on"))

    assert answer.status_code == 403
    assert not User.objects.get(pk=clerk.pk).is_superuser


def test_a_clerk_still_changes_a_smaller_persons_groups(as_clerk, pat):
    curator = Group.objects.get_or_create(name="curator")[0]

    answer = as_clerk.post(change_url(pat), user_form(pat, groups=[curator.pk]))

    assert answer.status_code == 302
    assert [g.name for g in User.objects.get(pk=pat.pk).groups.all()] == ["curator"]


def test_a_clerk_never_edits_a_group_a_superuser_belongs_to(as_clerk, root):
    admins = Group.objects.get(name="admin")
    admins.user_set.add(root)
    keeps = sorted(admins.permissions.values_list("codename", flat=True))

    answer = as_clerk.post(
        f"/admin/auth/group/{admins.pk}/change/", {"name": "admin", "permissions": []}
    )

    assert answer.status_code == 403
    assert "members: &#x27;root&#x27; holds more than you" in answer.content.decode()
    assert sorted(admins.permissions.values_list("codename", flat=True)) == keeps


def test_nor_gives_a_group_a_permission_they_lack(as_clerk, pat):
    support = Group.objects.get(name="support")
    asked = perm("auth", "delete_permission").pk

    answer = as_clerk.post(
        f"/admin/auth/group/{support.pk}/change/",
        {"name": "support", "permissions": [asked]},
    )
    made = as_clerk.post(
        "/admin/auth/group/add/", {"name": "newgroup", "permissions": [asked]}
    )

    for refused in (answer, made):
        assert refused.status_code == 403
        assert "permissions: &#x27;auth.delete_permission&#x27;" in (
            refused.content.decode()
        )
    assert not support.permissions.exists()
    assert not Group.objects.filter(name="newgroup").exists()


def test_nor_deletes_a_group_carrying_more(as_clerk, vault):
    answer = as_clerk.post(f"/admin/auth/group/{vault.pk}/delete/", {"post": "yes"})

    assert answer.status_code == 403
    assert Group.objects.filter(pk=vault.pk).exists()


def test_a_clerk_never_limits_a_superuser(as_clerk, root):
    answer = as_clerk.post(
        "/admin/identity/usercatalogaccess/add/",
        {"user": root.pk, "catalogs": '["default"]'},
    )

    assert answer.status_code == 403
    assert not UserCatalogAccess.objects.filter(user=root).exists()


def test_a_limited_clerk_never_lifts_a_limit_nor_adds_a_person_with_every_catalog(
    as_clerk, clerk, pat
):
    UserCatalogAccess.objects.create(user=clerk, catalogs=["default"])
    limit = UserCatalogAccess.objects.create(user=pat, catalogs=["default"])

    lifted = as_clerk.post(
        f"/admin/identity/usercatalogaccess/{limit.pk}/delete/", {"post": "yes"}
    )
    added = as_clerk.post(
        "/admin/auth/user/add/",
        {
            "username": "newbie",
            "usable_password": "true",
            "password1": "a-Long-pass-9876",
            "password2": "a-Long-pass-9876",
        },
    )

    assert lifted.status_code == 403 and "all_catalogs" in lifted.content.decode()
    assert UserCatalogAccess.objects.filter(pk=limit.pk).exists()
    assert added.status_code == 403 and "all_catalogs" in added.content.decode()
    assert not User.objects.filter(username="newbie").exists()
