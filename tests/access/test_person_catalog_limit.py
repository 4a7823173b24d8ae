"""A person's catalog limit fails closed: an empty list is no catalog; only a person
without a limit (no row, the People page's "all catalogs") sees every catalog."""

from __future__ import annotations

import pytest

from identity.access import access_for
from identity.models import UserCatalogAccess
from tests.factories import make_tool, make_user

pytestmark = pytest.mark.django_db


def test_a_person_without_a_limit_sees_every_catalog(as_user):
    person = make_user("pat")
    make_tool(name="get_weather")
    assert access_for(person).catalogs is None
    body = as_user(person).get("/api/v1/catalogs/").json()
    assert [c["slug"] for c in body["results"]] == ["default"]


@pytest.mark.parametrize("stored", [[], "", {}])
def test_an_empty_or_malformed_limit_is_no_catalog(as_user, client, stored):
    person = make_user("pat", groups=("curator",))
    make_tool(name="get_weather")
    UserCatalogAccess.objects.create(user=person, catalogs=stored)
    assert access_for(person).catalogs == ()
    api = as_user(person)
    assert api.get("/api/v1/catalogs/").json()["results"] == []
    assert api.get("/api/v1/catalogs/default/").status_code == 404
    assert api.get("/api/v1/tools/").json()["results"] == []
    client.force_login(person)
    assert "get_weather" not in client.get("/tools/").content.decode()
