"""POST/GET/PATCH/DELETE /api/v1/tools/"""

from __future__ import annotations

import pytest

from catalog.models import Tool, ToolChange
from tests.factories import make_tool, weather_schema

pytestmark = pytest.mark.django_db

WEATHER = {
    "name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": weather_schema(),
    "tags": ["weather"],
}


def test_it_requires_a_key_or_login(api):
    assert api.get("/api/v1/tools/").status_code in (401, 403)


def test_an_agent_key_reads_but_cannot_write(with_key):
    client = with_key("agent")
    assert client.get("/api/v1/tools/").status_code == 200
    response = client.post("/api/v1/tools/", WEATHER, format="json")
    assert response.status_code == 403
    assert "curator" in response.json()["detail"]


def test_a_curator_creates_a_tool_with_its_schema_kept_verbatim(with_key):
    client = with_key("curator")
    response = client.post("/api/v1/tools/", WEATHER, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["parameters"] == weather_schema()
    assert body["provider_name"] == "get_weather"
    assert body["version"] == 1
    assert body["prompt_tokens"] > 0
    tool = Tool.objects.get(name="get_weather")
    assert ToolChange.objects.filter(tool=tool, action="create").count() == 1


def test_a_duplicate_name_is_a_conflict_and_writes_nothing(with_key):
    client = with_key("curator")
    client.post("/api/v1/tools/", WEATHER, format="json")
    response = client.post("/api/v1/tools/", WEATHER, format="json")
    assert response.status_code == 409
    assert response.json()["fields"]["name"]
    assert Tool.objects.count() == 1
    assert ToolChange.objects.count() == 1


def test_a_tool_without_schema_is_rejected_naming_the_field(with_key):
    client = with_key("curator")
    body = {**WEATHER, "parameters": None}
    response = client.post("/api/v1/tools/", body, format="json")
    assert response.status_code == 400
    assert "parameters" in response.json()["fields"]
    assert not Tool.objects.exists()


def test_a_remote_ref_is_rejected_with_its_pointer(with_key):
    client = with_key("curator")
    schema = {
        "type": "object",
        "properties": {"city": {"$ref": "https://example.com/city.json"}},
    }
    response = client.post(
        "/api/v1/tools/", {**WEATHER, "parameters": schema}, format="json"
    )
    assert response.status_code == 400
    assert "/parameters/properties/city" in response.json()["detail"]


def test_an_unknown_field_is_named_in_the_error(with_key):
    response = with_key("curator").post(
        "/api/v1/tools/", {**WEATHER, "colour": "red"}, format="json"
    )
    assert response.status_code == 400
    assert "colour" in response.json()["fields"]


def test_a_patch_bumps_the_version_and_keeps_history(with_key):
    tool = make_tool(name="get_weather")
    client = with_key("curator")
    response = client.patch(
        f"/api/v1/tools/{tool.pk}/", {"description": "Weather now."}, format="json"
    )
    assert response.status_code == 200, response.json()
    assert response.json()["version"] == 2
    history = client.get(f"/api/v1/tools/{tool.pk}/history/").json()["results"]
    assert [c["action"] for c in history] == ["update", "create"]
    assert history[0]["before"]["description"] != history[0]["after"]["description"]


def test_deleting_a_tool_keeps_its_change_records(with_key):
    tool = make_tool(name="get_weather")
    response = with_key("curator").delete(f"/api/v1/tools/{tool.pk}/")
    assert response.status_code == 204
    assert not Tool.objects.exists()
    assert list(ToolChange.objects.values_list("action", flat=True)) == [
        "delete",
        "create",
    ]


def test_tools_are_filtered_by_tag_role_and_text(with_key):
    make_tool(name="get_weather", tags=["weather"])
    make_tool(name="refund_payment", tags=["payments"], allowed_roles=["finance"])
    client = with_key("curator")

    def names(q):
        return [t["name"] for t in client.get(f"/api/v1/tools/?{q}").json()["results"]]

    assert names("tag=weather") == ["get_weather"]
    assert names("role=support") == ["get_weather"]
    assert sorted(names("role=finance")) == ["get_weather", "refund_payment"]
    assert names("q=refund") == ["refund_payment"]
