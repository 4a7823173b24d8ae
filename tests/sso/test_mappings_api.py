"""The claim mapping over the API: admins only, each change audited, never more
than the admin holds, and a change reaches the people it names at once."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from audit.models import AuditEvent
from catalog.models import Catalog
from identity.models import UserCatalogAccess
from sso.models import ClaimMapping, Identity
from tests.factories import make_user

pytestmark = pytest.mark.django_db
URL = "/api/v1/sso/mappings"


@pytest.fixture(autouse=True)
def groups():
    return {n: Group.objects.get_or_create(name=n)[0] for n in ("admin", "curator")}


@pytest.fixture
def as_admin(as_user, admin_user):
    return as_user(admin_user)


def linked(username, values, groups=(), catalogs=None):
    """A person who signed in with this claim and holds what it gave then."""
    person = make_user(username, groups=groups)
    if catalogs is not None:
        UserCatalogAccess.objects.create(user=person, catalogs=catalogs)
    Identity.objects.create(
        user=person, issuer="https://id.example.com", subject=username,
        claim_values=values,
    )  # fmt: skip
    return person


def test_an_admin_maps_a_value_and_it_is_audited(as_admin):
    body = {"value": "acme-curators", "groups": ["curator"], "catalogs": ["default"]}
    answer = as_admin.post(URL, body, format="json")
    assert answer.status_code == 201, answer.json()
    assert answer.json()["groups"] == ["curator"]
    assert as_admin.get(URL).json()["results"][0]["value"] == "acme-curators"
    event = AuditEvent.objects.get(event_type="sign_in_settings")
    assert event.actor_name == "root" and event.input["action"] == "create"
    assert event.output["after"]["catalogs"] == ["default"]


def test_people_below_admin_and_keys_may_not_touch_the_mapping(as_user, with_key):
    curator_api = as_user(make_user("cu", groups=("curator",)))
    assert curator_api.get(URL).status_code == 403
    body = {"value": "x", "groups": [], "catalogs": "*"}
    assert curator_api.post(URL, body, format="json").status_code == 403
    key_api = with_key("admin")
    answer = key_api.post(URL, body, format="json")
    assert answer.status_code == 403
    assert "people are managed by people" in answer.json()["detail"]
    assert not ClaimMapping.objects.exists()


def test_an_admin_of_some_catalogs_gives_only_those_and_sees_no_bigger_mapping(
    as_user, groups
):
    Catalog.objects.create(slug="finance", name="Finance")
    limited = make_user("lim", groups=("admin",))
    UserCatalogAccess.objects.create(user=limited, catalogs=["default"])
    wide = ClaimMapping.objects.create(value="acme-all", catalogs=None)
    api = as_user(limited)
    for catalogs in ("*", ["finance"]):
        body = {"value": "acme-x", "groups": ["curator"], "catalogs": catalogs}
        answer = api.post(URL, body, format="json")
        assert answer.status_code == 403, catalogs
    assert [m["value"] for m in api.get(URL).json()["results"]] == []
    assert api.delete(f"{URL}/{wide.pk}").status_code == 404
    assert (
        api.patch(
            f"{URL}/{wide.pk}", {"groups": [], "catalogs": ["default"]}, format="json"
        ).status_code
        == 404
    )


def test_unknown_groups_catalogs_and_fields_are_named(as_admin):
    cases = [
        ({"value": "v", "groups": ["wizard"], "catalogs": "*"}, "groups"),
        ({"value": "v", "groups": [], "catalogs": ["nowhere"]}, "catalogs"),
        ({"value": "v", "groups": [], "catalogs": []}, "catalogs"),
        ({"value": " v", "groups": [], "catalogs": "*"}, "value"),
        ({"value": "v", "groups": [], "catalogs": "*", "admin": True}, "admin"),
    ]
    for body, field in cases:
        answer = as_admin.post(URL, body, format="json")
        assert answer.status_code == 400, body
        assert field in answer.json()["fields"], answer.json()
    assert not ClaimMapping.objects.exists()


def test_a_change_of_mapping_reaches_the_people_it_names_at_once(as_admin, groups):
    mapping = ClaimMapping.objects.create(value="acme-curators", catalogs=["default"])
    mapping.groups.set([groups["curator"]])
    ann = linked("ann", ["acme-curators"], groups=("curator",), catalogs=["default"])
    other = linked("oz", ["acme-sales"], groups=("curator",), catalogs=["default"])
    answer = as_admin.patch(
        f"{URL}/{mapping.pk}", {"groups": ["admin"], "catalogs": "*"}, format="json"
    )
    assert answer.status_code == 200, answer.json()
    assert set(ann.groups.values_list("name", flat=True)) == {"admin"}
    assert not UserCatalogAccess.objects.filter(user=ann).exists()
    assert set(other.groups.values_list("name", flat=True)) == {"curator"}
    changes = AuditEvent.objects.filter(event_type="access_changed")
    change = changes.filter(input__user_id=ann.pk).latest("pk")
    assert change.input["via"] == "sso mapping"
    assert not changes.filter(input__user_id=other.pk, input__via="sso mapping")

    assert as_admin.delete(f"{URL}/{mapping.pk}").status_code == 204
    assert ann.groups.count() == 0
    assert UserCatalogAccess.objects.get(user=ann).catalogs == []
    removed = AuditEvent.objects.filter(event_type="sign_in_settings").latest("pk")
    assert removed.input["action"] == "delete" and removed.output["after"] is None


def test_the_password_switch_needs_sso_and_an_admin_of_every_catalog(
    as_admin, as_user, settings
):
    settings.QUIVER_OIDC = None
    off = {"password_login": False}
    answer = as_admin.patch("/api/v1/sso/policy", off, format="json")
    assert answer.status_code == 400 and "password_login" in answer.json()["fields"]
    limited = make_user("lim", groups=("admin",))
    UserCatalogAccess.objects.create(user=limited, catalogs=["default"])
    assert (
        as_user(limited).patch("/api/v1/sso/policy", off, format="json").status_code
        == 403
    )
    assert not AuditEvent.objects.filter(event_type="sign_in_settings").exists()
