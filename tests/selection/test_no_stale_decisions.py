"""No cached decision outlives a change: the request right after a change to the
key, its person, the catalog or its settings is decided on the change, even when
the same request was just answered (from the answer cache) in the same process."""

from __future__ import annotations

from typing import Any

import pytest

from catalog.models import Tool
from catalog.services.catalogs import create_catalog
from catalog.services.tools import set_tool_status
from identity.models import ApiClient
from identity.services.clients import change_api_client, revoke_api_client
from selection.services.settings import update_selection_settings
from tests.factories import make_sample_catalog, make_user

pytestmark = pytest.mark.django_db
BODY = {"query": "what's the weather in Paris?", "max_candidates": 5}


@pytest.fixture
def agent(with_key: Any) -> Any:
    make_sample_catalog()
    api = with_key("agent", name="stale-probe")
    first = api.post("/api/v1/select", BODY, format="json")
    assert first.status_code == 200
    assert api.post("/api/v1/select", BODY, format="json").json()["cached"] is True
    return api


def key() -> ApiClient:
    return ApiClient.objects.get(name="stale-probe")


def select(api: Any) -> Any:
    return api.post("/api/v1/select", BODY, format="json")


def test_a_revoked_key_is_refused_on_the_next_request(agent):
    revoke_api_client(key(), actor=None)
    response = select(agent)
    assert response.status_code == 401
    assert response.json()["detail"] == "Authorization: API key revoked"


def test_a_key_whose_maker_is_deactivated_is_refused_on_the_next_request(with_key):
    make_sample_catalog()
    olga = make_user("olga", groups=("admin",))
    api = with_key("agent", name="stale-probe")
    ApiClient.objects.filter(name="stale-probe").update(owner=olga, owner_name="olga")
    assert select(api).status_code == 200
    olga.is_active = False
    olga.save(update_fields=["is_active"])
    response = select(api)
    assert response.status_code == 401
    assert response.json()["detail"] == "Authorization: API key of a deactivated user"


def test_a_key_that_loses_the_catalog_gets_a_404_on_the_next_request(agent):
    create_catalog("elsewhere", "Elsewhere", actor=None)
    change_api_client(key(), actor=None, catalogs=["elsewhere"])
    response = select(agent)
    assert response.status_code == 404
    assert response.json()["detail"] == "catalog: no catalog 'default'"


def test_a_key_that_loses_its_unsafe_permission_is_refused_on_the_next_request(
    with_key,
):
    make_sample_catalog()
    api = with_key("agent", name="stale-probe", allow_unsafe=True)
    unsafe = {**BODY, "allow_unsafe": True}
    assert api.post("/api/v1/select", unsafe, format="json").status_code == 200
    change_api_client(key(), actor=None, allow_unsafe=False)
    response = api.post("/api/v1/select", unsafe, format="json")
    assert response.status_code == 403
    assert response.json()["detail"].startswith("allow_unsafe: ")


def test_a_disabled_tool_is_not_offered_on_the_next_request(agent):
    offered = [tool["name"] for tool in select(agent).json()["tools"]]
    assert "get_weather" in offered
    set_tool_status(Tool.objects.get(name="get_weather"), "disabled", actor=None)
    answer = select(agent).json()
    assert answer["cached"] is False
    assert "get_weather" not in [tool["name"] for tool in answer["tools"]]


def test_new_settings_rank_the_next_request(agent, admin_user):
    catalog = Tool.objects.get(name="get_weather").catalog
    before = select(agent).json()
    _, version = update_selection_settings(
        catalog, {"default_scorer": "bm25f"}, actor=admin_user
    )
    answer = select(agent).json()
    assert answer["cached"] is False
    assert answer["settings_version"] == version != before["settings_version"]
    assert answer["scorer"] == "bm25f"
