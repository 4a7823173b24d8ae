"""The console's People page: admins only; create, set groups and catalogs,
deactivate; each action audited; nobody is made bigger than the admin acting."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client

from audit.models import AuditEvent
from catalog.services import create_catalog
from identity.models import UserCatalogAccess
from identity.services import create_api_client
from tests.factories import make_user

pytestmark = pytest.mark.django_db

User = get_user_model()


@pytest.fixture(autouse=True)
def standard_groups(db: None) -> None:
    for name in ("admin", "curator", "compliance", "support"):
        Group.objects.get_or_create(name=name)
    create_catalog("other", "Other", "", actor=None)


@pytest.fixture
def as_admin(client: Client) -> Client:
    client.force_login(make_user("root", superuser=True))
    return client


@pytest.fixture
def as_limited_admin(client: Client) -> Client:
    """An admin (the admin group) whose own access is limited to ``other``."""
    person = make_user("lim", groups=("admin",))
    UserCatalogAccess.objects.create(user=person, catalogs=["other"])
    client.force_login(person)
    return client


def access_events() -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(event_type="access_changed").order_by("id"))


def new_person(**fields: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"username": "dana", "groups": ["compliance"]}
    data.update(fields)
    return data


def password_shown(html: str) -> str:
    block = html.split('data-testid="new-password"')[1]
    return block.split("<code>")[1].split("</code>")[0]


def test_a_curator_cannot_open_or_use_the_people_page(as_curator):
    person = make_user("pat")
    assert as_curator.get("/people/").status_code == 403
    assert as_curator.post("/people/", new_person()).status_code == 403
    assert as_curator.get(f"/people/{person.pk}/").status_code == 403
    response = as_curator.post(f"/people/{person.pk}/active/", {"active": "0"})
    assert response.status_code == 403
    assert not User.objects.filter(username="dana").exists()
    assert User.objects.get(pk=person.pk).is_active


def test_the_navigation_offers_people_only_to_admins(as_curator, client):
    assert ">People<" not in as_curator.get("/tools/").content.decode()
    client.force_login(make_user("root", superuser=True))
    assert ">People<" in client.get("/tools/").content.decode()


def test_the_list_shows_groups_catalogs_and_state_but_no_key_users(as_admin):
    make_user("pat", groups=("curator", "support"))
    limited = make_user("lee")
    UserCatalogAccess.objects.create(user=limited, catalogs=["other"])
    gone = make_user("gus")
    gone.is_active = False
    gone.save()
    create_api_client("bot", "agent", catalogs="*", actor=None)
    html = as_admin.get("/people/").content.decode()
    row = html.split('data-person="pat"')[1].split("</tr>")[0]
    assert "curator, support" in row and "all catalogs" in row and "active" in row
    assert "other" in html.split('data-person="lee"')[1].split("</tr>")[0]
    assert "deactivated" in html.split('data-person="gus"')[1].split("</tr>")[0]
    assert "api:bot" not in html


def test_the_list_is_paged(as_admin):
    for number in range(30):
        make_user(f"person{number:02}")
    first = as_admin.get("/people/").content.decode()
    second = as_admin.get("/people/?page=2").content.decode()
    assert first.count("data-person=") == 25
    assert second.count("data-person=") == 31 - 25  # root too


def test_an_admin_creates_a_person_and_sees_the_password_once(as_admin):
    response = as_admin.post(
        "/people/", new_person(groups=["compliance", "support"], catalogs="other")
    )
    assert response.status_code == 200
    password = password_shown(response.content.decode())
    dana = User.objects.get(username="dana")
    assert sorted(dana.groups.values_list("name", flat=True)) == [
        "compliance",
        "support",
    ]
    assert dana.catalog_access.catalogs == ["other"]
    assert password not in as_admin.get("/people/").content.decode()
    assert Client().login(username="dana", password=password)
    (event,) = [e for e in access_events() if e.input.get("user_id") == dana.pk]
    assert event.actor_name == "root"
    assert event.input["via"] == "people page"
    assert event.input["before"] is None
    assert event.output["after"]["groups"] == ["compliance", "support"]
    assert event.output["after"]["catalogs"] == ["other"]


def test_all_catalogs_is_an_explicit_box(as_admin):
    as_admin.post("/people/", new_person(all_catalogs="on"))
    assert not UserCatalogAccess.objects.filter(user__username="dana").exists()


@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({}, "catalogs", "name at least one catalog, or choose all catalogs"),
        ({"all_catalogs": "on", "catalogs": "other"}, "catalogs", "leave empty"),
        ({"catalogs": "nowhere"}, "catalogs", "no catalog nowhere"),
        ({"catalogs": "other", "groups": ["wizards"]}, "groups", "wizards"),
        ({"catalogs": "other", "username": "bad name!"}, "username", "Letters"),
        ({"catalogs": "other", "username": "root"}, "username", "already exists"),
    ],
)
def test_a_bad_new_person_is_a_400_naming_the_field(as_admin, fields, field, words):
    before = User.objects.count(), len(access_events())
    response = as_admin.post("/people/", new_person(**fields))
    assert response.status_code == 400
    html = response.content.decode()
    error = html.split(f'data-field="{field}"')[1].split("</div>\n</div>")[0]
    assert words in error
    assert (User.objects.count(), len(access_events())) == before


def test_an_admin_edits_groups_and_catalogs_in_one_event(as_admin):
    pat = make_user("pat", groups=("support",))
    mark = len(access_events())
    response = as_admin.post(
        f"/people/{pat.pk}/", {"groups": ["curator"], "catalogs": "other, default"}
    )
    assert response.status_code == 302
    assert list(pat.groups.values_list("name", flat=True)) == ["curator"]
    assert pat.catalog_access.catalogs == ["other", "default"]
    (event,) = access_events()[mark:]
    assert event.input["before"]["groups"] == ["support"]
    assert event.input["before"]["catalogs"] == "*"
    assert event.output["after"]["catalogs"] == ["other", "default"]
    as_admin.post(f"/people/{pat.pk}/", {"groups": ["curator"], "all_catalogs": "on"})
    assert not UserCatalogAccess.objects.filter(user=pat).exists()
    assert len(access_events()) == mark + 2


def test_the_edit_form_shows_the_persons_current_access(as_admin):
    pat = make_user("pat", groups=("support",))
    UserCatalogAccess.objects.create(user=pat, catalogs=["other"])
    html = as_admin.get(f"/people/{pat.pk}/").content.decode()
    assert re.search(r'value="support"[^>]*checked', html)
    assert not re.search(r'value="curator"[^>]*checked', html)
    assert 'value="other"' in html


def test_an_admin_deactivates_and_reactivates_a_person(as_admin):
    pat = make_user("pat")
    mark = len(access_events())
    response = as_admin.post(f"/people/{pat.pk}/active/", {"active": "0"})
    assert response.status_code == 302
    assert not User.objects.get(pk=pat.pk).is_active
    assert not Client().login(username="pat", password="pw-12345678")
    as_admin.post(f"/people/{pat.pk}/active/", {"active": "1"})
    assert User.objects.get(pk=pat.pk).is_active
    events = access_events()[mark:]
    assert [e.output["after"]["is_active"] for e in events] == [False, True]


def test_an_admin_cannot_deactivate_themselves(as_admin):
    root = User.objects.get(username="root")
    response = as_admin.post(f"/people/{root.pk}/active/", {"active": "0"})
    assert response.status_code == 400
    assert "you cannot deactivate yourself" in response.content.decode()
    assert User.objects.get(pk=root.pk).is_active


def test_the_forms_need_the_csrf_token(db):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(make_user("root", superuser=True))
    pat = make_user("pat")
    assert browser.post("/people/", new_person(all_catalogs="on")).status_code == 403
    response = browser.post(f"/people/{pat.pk}/active/", {"active": "0"})
    assert response.status_code == 403
    assert not User.objects.filter(username="dana").exists()
    assert User.objects.get(pk=pat.pk).is_active
    assert "csrfmiddlewaretoken" in browser.get("/people/").content.decode()


# An admin limited to some catalogs never makes or manages anyone bigger.


def test_a_limited_admin_cannot_give_all_catalogs(as_limited_admin):
    response = as_limited_admin.post("/people/", new_person(all_catalogs="on"))
    assert response.status_code == 403
    assert "all_catalogs: you may only give catalogs you hold yourself" in (
        response.content.decode()
    )
    assert not User.objects.filter(username="dana").exists()


def test_a_limited_admin_gets_one_answer_for_unknown_and_unheld_catalogs(
    as_limited_admin,
):
    answers = []
    for slug in ("default", "no-such-catalog"):
        response = as_limited_admin.post("/people/", new_person(catalogs=slug))
        assert response.status_code == 403
        html = response.content.decode()
        assert f"catalogs: not within your catalogs: {slug}" in html
        main = html.split("<main")[1].replace(slug, "SLUG")
        answers.append(re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", main))
    assert answers[0] == answers[1]
    assert not User.objects.filter(username="dana").exists()


def test_a_limited_admin_creates_within_their_catalogs(as_limited_admin):
    response = as_limited_admin.post("/people/", new_person(catalogs="other"))
    assert response.status_code == 200
    assert User.objects.get(username="dana").catalog_access.catalogs == ["other"]


def test_a_limited_admin_sees_and_manages_only_people_within_their_catalogs(
    as_limited_admin,
):
    root = make_user("root", superuser=True)
    wide = make_user("wide")
    UserCatalogAccess.objects.create(user=wide, catalogs=["other", "default"])
    near = make_user("near")
    UserCatalogAccess.objects.create(user=near, catalogs=["other"])
    html = as_limited_admin.get("/people/").content.decode()
    assert 'data-person="near"' in html and 'data-person="lim"' in html
    assert 'data-person="root"' not in html and 'data-person="wide"' not in html
    for person in (root, wide):
        assert as_limited_admin.get(f"/people/{person.pk}/").status_code == 404
        response = as_limited_admin.post(
            f"/people/{person.pk}/active/", {"active": "0"}
        )
        assert response.status_code == 404
        assert User.objects.get(pk=person.pk).is_active
    response = as_limited_admin.post(
        f"/people/{near.pk}/", {"groups": [], "catalogs": "other, default"}
    )
    assert response.status_code == 403
    assert "catalogs: not within your catalogs: default" in response.content.decode()
    assert UserCatalogAccess.objects.get(user=near).catalogs == ["other"]
