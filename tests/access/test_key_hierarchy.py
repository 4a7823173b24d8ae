"""A key never makes or manages a bigger key: whoever creates, lists, edits, rotates
or revokes a key holds everything it holds (identity.access.key_within)."""

from __future__ import annotations

import importlib
from datetime import timedelta
from typing import Any

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.migrations.loader import MigrationLoader
from django.utils import timezone
from rest_framework.test import APIClient

from audit.models import AuditEvent
from catalog.services import create_catalog
from identity.access import KeyGrant, access_for, key_within
from identity.models import ApiClient, UserCatalogAccess
from identity.services.clients import change_api_client, create_api_client
from tests.factories import make_client_key, make_user

pytestmark = pytest.mark.django_db


def as_key(key: str) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return api


@pytest.fixture
def root(db: None) -> ApiClient:
    """The unlimited admin key: every catalog, unsafe tools, the site's limit."""
    make_client_key("root", "admin", allow_unsafe=True)
    return ApiClient.objects.get(name="root")


@pytest.fixture
def limited(root: ApiClient) -> APIClient:
    """An admin key limited to catalog ``other``, no unsafe tools, 10 a minute."""
    create_catalog("other", "Other")
    key = make_client_key(
        "limited", "admin", catalogs=["other"], rate_limit_per_minute=10
    )
    return as_key(key)


def new_key(api: APIClient, **fields: Any) -> Any:
    body = {"name": "made", "scope": "agent", "catalogs": ["other"], **fields}
    return api.post("/api/v1/clients/", body, format="json")


def test_a_limited_admin_key_lists_only_the_keys_within_it(limited, root):
    make_client_key("other-bot", "agent", catalogs=["other"], rate_limit_per_minute=5)
    make_client_key("default-bot", "agent", catalogs=["default"])
    listed = {c["name"] for c in limited.get("/api/v1/clients/").json()["results"]}
    assert listed == {"limited", "other-bot"}


@pytest.mark.parametrize(
    ("method", "suffix", "body"),
    [
        ("get", "", None),
        ("post", "rotate", None),
        ("post", "revoke", None),
        ("patch", "", {"roles": ["support"]}),
    ],
    ids=["retrieve", "rotate", "revoke", "edit"],
)
def test_a_limited_admin_key_cannot_touch_the_unlimited_admin_key(
    limited, root, method, suffix, body
):
    rows = AuditEvent.objects.count()
    url = f"/api/v1/clients/{root.pk}/{suffix + '/' if suffix else ''}"
    response = getattr(limited, method)(url, body, format="json")
    unknown = getattr(limited, method)(
        url.replace(str(root.pk), "999999"), body, format="json"
    )
    assert response.status_code == 404
    assert response.json() == unknown.json()
    before = ApiClient.objects.get(pk=root.pk)
    assert (before.key_hash, before.revoked, before.roles) == (
        root.key_hash,
        False,
        root.roles,
    )
    assert AuditEvent.objects.count() == rows


def test_a_limited_admin_key_cannot_make_an_unlimited_admin_key(limited):
    response = new_key(limited, scope="admin", catalogs="*")
    assert response.status_code == 403
    assert response.json()["detail"].startswith("catalogs:")
    assert not ApiClient.objects.filter(name="made").exists()


def test_a_catalog_outside_the_callers_limit_answers_like_an_unknown_one(limited):
    outside = new_key(limited, catalogs=["default"])
    unknown = new_key(limited, catalogs=["no-such-catalog"])
    assert outside.status_code == unknown.status_code == 403
    assert outside.json()["detail"].startswith("catalogs:")
    assert outside.json()["detail"].replace("default", "X") == unknown.json()[
        "detail"
    ].replace("no-such-catalog", "X")
    assert not ApiClient.objects.filter(name="made").exists()


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"catalogs": ["other", "default"]}, "catalogs"),
        ({"catalogs": "*"}, "catalogs"),
        ({"allow_unsafe": True}, "allow_unsafe"),
        ({"rate_limit_per_minute": None}, "rate_limit_per_minute"),
        ({"rate_limit_per_minute": 0}, "rate_limit_per_minute"),
        ({"rate_limit_per_minute": 11}, "rate_limit_per_minute"),
    ],
    ids=lambda v: str(v),
)
def test_a_key_cannot_make_a_key_bigger_than_itself(limited, fields, field):
    body = {"rate_limit_per_minute": 10, **fields}
    response = new_key(limited, **body)
    assert response.status_code == 403, response.content
    assert response.json()["detail"].startswith(f"{field}:")
    assert not ApiClient.objects.filter(name="made").exists()


def test_a_key_makes_a_key_within_itself_and_is_recorded_as_its_parent(limited):
    response = new_key(limited, rate_limit_per_minute=10, roles=["support"])
    assert response.status_code == 201, response.content
    assert response.json()["parent"] == "limited"
    made = ApiClient.objects.get(name="made")
    assert made.parent is not None and made.parent.name == "limited"
    assert made.owner is None


@pytest.mark.parametrize(
    ("expires_in", "status"),
    [(None, 403), (timedelta(days=2), 403), (timedelta(hours=1), 201)],
    ids=["never", "after the caller", "before the caller"],
)
def test_a_key_with_an_expiry_cannot_make_a_key_that_outlives_it(
    root, expires_in, status
):
    soon = timezone.now() + timedelta(days=1)
    api = as_key(make_client_key("brief", "admin", allow_unsafe=True, expires=soon))
    expires = (timezone.now() + expires_in).isoformat() if expires_in else None
    response = new_key(api, catalogs="*", expires=expires)
    assert response.status_code == status, response.content
    if status == 403:
        assert response.json()["detail"].startswith("expires:")


@pytest.mark.parametrize(
    ("method", "suffix"), [("get", ""), ("post", "rotate/"), ("post", "revoke/")]
)
def test_a_key_never_sees_or_manages_the_equal_key_that_made_it(root, method, suffix):
    boss = as_key(make_client_key("boss", "admin", allow_unsafe=True))
    made = new_key(boss, scope="admin", catalogs="*", allow_unsafe=True)
    child = as_key(made.json()["key"])
    boss_id = ApiClient.objects.get(name="boss").pk
    response = getattr(child, method)(f"/api/v1/clients/{boss_id}/{suffix}")
    assert response.status_code == 404
    listed = {c["name"] for c in child.get("/api/v1/clients/").json()["results"]}
    assert "boss" not in listed
    assert {"root", "made"} <= listed
    assert ApiClient.objects.get(pk=boss_id).revoked is False


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"catalogs": "*"}, "catalogs"),
        ({"catalogs": ["other", "default"]}, "catalogs"),
        ({"catalogs": ["no-such-catalog"]}, "catalogs"),
        ({"allow_unsafe": True}, "allow_unsafe"),
        ({"rate_limit_per_minute": None}, "rate_limit_per_minute"),
        ({"rate_limit_per_minute": 500}, "rate_limit_per_minute"),
    ],
    ids=lambda v: str(v),
)
def test_a_key_cannot_edit_a_key_into_one_bigger_than_itself(limited, change, field):
    made = new_key(limited, rate_limit_per_minute=10).json()
    rows = AuditEvent.objects.count()
    response = limited.patch(f"/api/v1/clients/{made['id']}/", change, format="json")
    assert response.status_code == 403, response.content
    assert response.json()["detail"].startswith(f"{field}:")
    stored = ApiClient.objects.get(pk=made["id"])
    assert (stored.catalogs, stored.all_catalogs, stored.allow_unsafe) == (
        ["other"],
        False,
        False,
    )
    assert stored.rate_limit_per_minute == 10
    assert AuditEvent.objects.count() == rows


def test_an_edit_is_audited_with_the_key_before_and_after(limited):
    made = new_key(limited, rate_limit_per_minute=10).json()
    response = limited.patch(
        f"/api/v1/clients/{made['id']}/",
        {"roles": ["support"], "rate_limit_per_minute": 3},
        format="json",
    )
    assert response.status_code == 200, response.content
    assert response.json()["roles"] == ["support"]
    event = AuditEvent.objects.get(event_type="client_changed")
    assert event.input["before"]["rate_limit_per_minute"] == 10
    assert event.input["before"]["roles"] == []
    assert event.output["after"]["rate_limit_per_minute"] == 3
    assert event.output["after"]["roles"] == ["support"]


def test_an_edit_names_a_field_that_cannot_be_changed(root):
    api = as_key(make_client_key("boss", "admin", allow_unsafe=True))
    response = api.patch(f"/api/v1/clients/{root.pk}/", {"scope": "agent"}, "json")
    assert response.status_code == 400
    assert response.json()["detail"].startswith("scope:")


@pytest.mark.parametrize("catalogs", [[], None], ids=["empty list", "missing"])
def test_an_empty_catalog_list_is_refused_naming_the_rule(root, catalogs):
    api = as_key(make_client_key("boss", "admin", allow_unsafe=True))
    body = {"name": "made", "scope": "agent"}
    if catalogs is not None:
        body["catalogs"] = catalogs
    response = api.post("/api/v1/clients/", body, format="json")
    assert response.status_code == 400
    assert response.json()["detail"].startswith("catalogs:")
    assert "'*'" in response.json()["detail"]
    assert not ApiClient.objects.filter(name="made").exists()


def test_an_unlimited_admin_key_makes_an_every_catalog_key(root):
    api = as_key(make_client_key("boss", "admin", allow_unsafe=True))
    response = api.post(
        "/api/v1/clients/",
        {"name": "made", "scope": "admin", "catalogs": "*"},
        format="json",
    )
    assert response.status_code == 201, response.content
    assert response.json()["catalogs"] == "*"
    assert ApiClient.objects.get(name="made").all_catalogs is True


def test_a_key_with_no_catalogs_and_no_all_catalogs_sees_no_catalog(root):
    key = make_client_key("nothing", "admin", catalogs=["default"])
    ApiClient.objects.filter(name="nothing").update(catalogs=[], all_catalogs=False)
    assert as_key(key).get("/api/v1/catalogs/").json()["results"] == []
    assert as_key(key).get("/api/v1/catalogs/default/").status_code == 404


def test_the_migration_turns_empty_catalogs_into_every_catalog(root):
    ApiClient.objects.filter(name="root").update(catalogs=[], all_catalogs=False)
    migration = importlib.import_module(
        "catalog.migrations.0051_apiclient_parent_and_all_catalogs"
    )
    # The models as that migration knew them (the keys were the catalog app's then).
    at = MigrationLoader(connection).project_state(
        ("catalog", "0051_apiclient_parent_and_all_catalogs")
    )
    migration.make_unlimited_explicit(at.apps, None)
    assert ApiClient.objects.get(name="root").all_catalogs is True


# The rule itself, over every dimension, for callers that are not admins ----------


def grant(**fields: Any) -> KeyGrant:
    values = {
        "scope": "agent",
        "catalogs": ("default",),
        "roles": ("support",),
        "allow_unsafe": False,
        "rate_limit": None,
    }
    return KeyGrant(**{**values, **fields})


@pytest.mark.parametrize(
    ("caller", "key", "field"),
    [
        ("curator", "admin", "scope"),
        ("curator", "compliance", "scope"),
        ("compliance", "curator", "scope"),
        ("agent", "curator", "scope"),
    ],
)
def test_a_scope_covers_only_itself_and_agent_below_admin(caller, key, field):
    person = make_user("pat", groups=(caller,) if caller != "agent" else ())
    assert key_within(access_for(person), grant(scope=key, roles=())).startswith(
        f"{field}:"
    )
    assert key_within(access_for(person), grant(scope=caller, roles=())) == ""


def test_a_curator_cannot_give_a_key_a_role_it_does_not_have():
    person = make_user("pat", groups=("curator", "support"))
    with pytest.raises(PermissionDenied, match=r"^roles: 'finance'"):
        create_api_client(
            "made", "agent", ["support", "finance"], ["default"], actor=person
        )
    assert key_within(access_for(person), grant(roles=("support",))) == ""


def test_a_person_without_the_unsafe_permission_cannot_give_it():
    person = make_user("pat", groups=("curator",))
    problem = key_within(access_for(person), grant(allow_unsafe=True, roles=()))
    assert problem.startswith("allow_unsafe:")


def test_a_key_on_the_site_limit_cannot_make_a_looser_key(settings):
    settings.QUIVER_RATE_LIMIT_PER_MINUTE = 100
    key = make_client_key("site", "admin", allow_unsafe=True)
    access = access_for(ApiClient.objects.get(name="site").user)
    assert as_key(key).get("/api/v1/clients/").status_code == 200
    assert key_within(access, grant(rate_limit=None)) == ""
    assert key_within(access, grant(rate_limit=100)) == ""
    for looser in (0, 101):
        assert key_within(access, grant(rate_limit=looser)).startswith(
            "rate_limit_per_minute:"
        )


# People in the console and the command ------------------------------------------


@pytest.fixture
def limited_person(client, root):
    create_catalog("other", "Other")
    person = make_user("lim", groups=("admin",))
    UserCatalogAccess.objects.create(user=person, catalogs=["other"])
    client.force_login(person)
    return client


def test_a_limited_person_sees_only_keys_within_them_on_the_keys_page(
    limited_person,
):
    make_client_key("other-bot", "agent", catalogs=["other"])
    html = limited_person.get("/keys/").content.decode()
    assert 'data-client="other-bot"' in html
    assert 'data-client="root"' not in html


@pytest.mark.parametrize("action", ["rotate", "revoke"])
def test_a_limited_person_cannot_rotate_or_revoke_a_bigger_key(
    limited_person, root, action
):
    assert limited_person.post(f"/keys/{root.pk}/{action}/").status_code == 404
    stored = ApiClient.objects.get(pk=root.pk)
    assert (stored.key_hash, stored.revoked) == (root.key_hash, False)


def test_a_limited_person_cannot_make_an_every_catalog_key_on_the_page(
    limited_person,
):
    response = limited_person.post(
        "/keys/", {"name": "made", "scope": "agent", "all_catalogs": "on"}
    )
    assert response.status_code == 403
    assert "catalogs: &#x27;*&#x27;" in response.content.decode()
    assert not ApiClient.objects.filter(name="made").exists()


def test_the_keys_page_refuses_a_key_with_no_catalogs(limited_person):
    response = limited_person.post("/keys/", {"name": "made", "scope": "agent"})
    assert "catalogs: name the catalogs" in response.content.decode()
    assert not ApiClient.objects.filter(name="made").exists()


def test_the_command_makes_an_every_catalog_key_only_when_asked(capsys):
    with pytest.raises(CommandError, match="catalogs:"):
        call_command("create_api_client", "none", "--scope", "agent")
    call_command("create_api_client", "every", "--scope", "agent", "--all-catalogs")
    call_command("create_api_client", "star", "--scope", "agent", "--catalogs", "*")
    stored = ApiClient.objects.filter(name__in=["every", "star"])
    assert [c.all_catalogs for c in stored] == [True, True]


def test_the_service_refuses_an_empty_list_even_from_the_system():
    with pytest.raises(ValidationError, match="catalogs:"):
        create_api_client("made", "agent", [], [])


def test_a_person_cannot_edit_a_key_they_do_not_hold(root):
    person = make_user("pat", groups=("curator",))
    with pytest.raises(PermissionDenied, match="^scope:"):
        change_api_client(root, actor=person, roles=["x"])
