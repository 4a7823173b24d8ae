"""catalogs/{slug}/selection-settings is read by curators, compliance and admins
only: the settings name tools (core_tools, micro-anchors, transitions) that an
agent's roles or unsafe permission may hide from it, so an agent key or person
gets 403 (404 for a catalog it cannot see), on the API and in the console."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rest_framework.test import APIClient

from catalog.services import create_catalog
from catalog.services.catalogs import ensure_default_catalog
from selection.services.settings import update_selection_settings
from tests.factories import make_client_key, make_tool, make_user

pytestmark = pytest.mark.django_db

API = "/api/v1/catalogs/{slug}/selection-settings"
PAGE = "/catalogs/{slug}/selection-settings/"
SECRET_SETTINGS = {
    "core_tools": ["wipe_disk"],
    "micro_anchors": [{"pattern": "refund", "tools": ["refund_payment"], "boost": 1.0}],
    "transitions": {"get_weather": {"wipe_disk": 0.5}},
}


@pytest.fixture
def tuned(db) -> Any:
    catalog = ensure_default_catalog()
    make_tool(name="get_weather")
    make_tool(name="wipe_disk", safe=False)
    make_tool(name="refund_payment", allowed_roles=["billing"])
    update_selection_settings(catalog, SECRET_SETTINGS, actor=None)
    return catalog


def key(scope: str, **options: Any) -> APIClient:
    api = APIClient()
    secret = make_client_key(f"{scope}-key", scope, **options)
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return api


@pytest.mark.parametrize(
    "options",
    [{}, {"roles": ["billing"]}, {"allow_unsafe": True}],
    ids=["plain", "billing", "unsafe"],
)
def test_an_agent_key_may_not_read_the_settings(tuned, options):
    response = key("agent", **options).get(API.format(slug="default"))
    assert response.status_code == 403
    body = response.json()
    assert body["error"] == "permission_denied"
    assert "curators, compliance and admins" in body["detail"]
    for name in ("wipe_disk", "refund_payment"):
        assert name not in response.content.decode()


def test_an_agent_key_learns_nothing_of_a_catalog_it_cannot_see(tuned):
    create_catalog("elsewhere", "Elsewhere")
    limited = key("agent", catalogs=["elsewhere"])
    assert limited.get(API.format(slug="default")).status_code == 404
    assert limited.get(API.format(slug="nowhere")).status_code == 404


@pytest.mark.parametrize("scope", ["curator", "compliance", "admin"])
def test_whole_catalog_readers_see_every_tool_the_settings_name(tuned, scope):
    response = key(scope).get(API.format(slug="default"))
    assert response.status_code == 200, response.content
    settings = response.json()["settings"]
    assert settings["core_tools"] == ["wipe_disk"]
    assert settings["micro_anchors"][0]["tools"] == ["refund_payment"]
    assert settings["transitions"] == {"get_weather": {"wipe_disk": 0.5}}


def test_an_agent_person_gets_403_from_the_settings_page(tuned, client):
    client.force_login(make_user("mo"))
    response = client.get(PAGE.format(slug="default"))
    assert response.status_code == 403
    assert "wipe_disk" not in response.content.decode()


def test_an_agent_person_cannot_read_them_by_posting_either(tuned, client):
    client.force_login(make_user("mo"))
    body = {"settings": json.dumps({"candidate_pool": 30})}
    response = client.post(PAGE.format(slug="default"), body)
    assert response.status_code == 403
    assert "wipe_disk" not in response.content.decode()


def test_a_curator_reads_and_edits_them_on_the_page(tuned, client):
    client.force_login(make_user("carla", groups=("curator",)))
    response = client.get(PAGE.format(slug="default"))
    assert response.status_code == 200
    assert "wipe_disk" in response.content.decode()
    assert "Save settings" in response.content.decode()


def test_the_try_it_page_links_the_settings_only_for_whole_catalog_readers(
    tuned, client
):
    link = 'data-testid="settings-link"'
    client.force_login(make_user("mo"))
    assert link not in client.get("/try/").content.decode()
    client.force_login(make_user("cora", groups=("compliance",)))
    assert link in client.get("/try/").content.decode()
