"""GET /api/v1/tools/?ordering=, GET /api/v1/tools/export, and the change
``reason`` on the API's tool writes."""

from __future__ import annotations

import csv
import io
from decimal import Decimal

import pytest

from audit.models import AuditEvent
from catalog.models import Tool, ToolChange
from catalog.services import create_catalog
from tests.factories import make_tool, weather_schema

pytestmark = pytest.mark.django_db


def names(response) -> list[str]:
    assert response.status_code == 200, response.json()
    return [tool["name"] for tool in response.json()["results"]]


def rows(response) -> list[dict[str, str]]:
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    text = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(text)))


def test_the_list_sorts_by_name_both_ways(with_key):
    for name in ("beta", "alpha", "gamma"):
        make_tool(name=name)
    client = with_key("agent")
    assert names(client.get("/api/v1/tools/?ordering=name")) == [
        "alpha",
        "beta",
        "gamma",
    ]
    assert names(client.get("/api/v1/tools/?ordering=-name")) == [
        "gamma",
        "beta",
        "alpha",
    ]


def test_the_list_sorts_by_last_change_and_by_cost(with_key):
    make_tool(name="old", cost_per_call=Decimal("0.5"))
    make_tool(name="new", cost_per_call=Decimal("0.1"))
    client = with_key("agent")
    assert names(client.get("/api/v1/tools/?ordering=-updated_at")) == ["new", "old"]
    assert names(client.get("/api/v1/tools/?ordering=cost")) == ["new", "old"]


def test_safety_sorts_safe_and_low_risk_first(with_key):
    make_tool(name="danger", safe=False, risk_level="critical")
    make_tool(name="calm", risk_level="low")
    make_tool(name="edgy", risk_level="high")
    client = with_key("admin")
    assert names(client.get("/api/v1/tools/?ordering=safety")) == [
        "calm",
        "edgy",
        "danger",
    ]


@pytest.mark.parametrize("ordering", ["colour", "-", "--name", "name,id", "password"])
def test_an_unknown_ordering_is_a_400_naming_ordering(with_key, ordering):
    response = with_key("agent").get("/api/v1/tools/", {"ordering": ordering})
    assert response.status_code == 400
    assert "ordering" in response.json()["fields"]


def test_export_is_the_filtered_list_as_csv(with_key):
    make_tool(name="w1", category="weather", tags=["a", "b"])
    make_tool(name="w2", category="weather")
    make_tool(name="other", category="ops")
    client = with_key("agent")
    found = rows(client.get("/api/v1/tools/export?format=csv&category=weather"))
    assert [row["name"] for row in found] == ["w1", "w2"]
    assert found[0]["tags"] == "a, b"
    assert found[0]["catalog"] == "default"


def test_export_follows_the_ordering_and_refuses_an_unknown_format(with_key):
    make_tool(name="a1")
    make_tool(name="b1")
    client = with_key("agent")
    found = rows(client.get("/api/v1/tools/export?ordering=-name"))
    assert [row["name"] for row in found] == ["b1", "a1"]
    response = client.get("/api/v1/tools/export?format=xlsx")
    assert response.status_code == 400
    assert "format" in response.json()["fields"]


def test_export_is_formula_safe(with_key):
    make_tool(
        name="sheet",
        title='=HYPERLINK("https://evil.example","x")',
        category="@SUM(A1)",
        tags=["+cmd", "-2"],
    )
    found = rows(with_key("agent").get("/api/v1/tools/export"))
    assert found[0]["title"].startswith("'=HYPERLINK")
    assert found[0]["category"] == "'@SUM(A1)"
    assert found[0]["tags"] == "'+cmd, -2"


def test_export_lists_only_what_the_caller_may_read(with_key):
    hidden = create_catalog("hidden", "Hidden", actor=None)
    make_tool(hidden, "secret_tool")
    make_tool(name="unsafe_tool", safe=False)
    make_tool(name="finance_only", allowed_roles=["finance"])
    make_tool(name="open_tool")
    client = with_key("agent", roles=["support"], catalogs=["default"])
    found = [row["name"] for row in rows(client.get("/api/v1/tools/export"))]
    assert found == ["open_tool"]
    response = client.get("/api/v1/tools/export?catalog=hidden")
    assert [row["name"] for row in rows(response)] == []


def test_export_needs_a_caller(api):
    assert api.get("/api/v1/tools/export").status_code in (401, 403)


def test_a_reason_on_create_update_and_delete_is_kept_and_shown_in_history(with_key):
    client = with_key("curator")
    body = {"name": "r_tool", "parameters": weather_schema(), "reason": "new vendor"}
    created = client.post("/api/v1/tools/", body, format="json")
    assert created.status_code == 201, created.json()
    tool_id = created.json()["id"]
    patched = client.patch(
        f"/api/v1/tools/{tool_id}/",
        {"description": "Now with units.", "reason": "ticket 42"},
        format="json",
    )
    assert patched.status_code == 200, patched.json()
    history = client.get(f"/api/v1/tools/{tool_id}/history/").json()["results"]
    assert [c["reason"] for c in history] == ["ticket 42", "new vendor"]
    deleted = client.delete(f"/api/v1/tools/{tool_id}/?reason=retired")
    assert deleted.status_code == 204
    assert ToolChange.objects.get(tool_name="r_tool", action="delete").reason == (
        "retired"
    )
    reasons = [
        e.input.get("reason")
        for e in AuditEvent.objects.filter(event_type="tool_changed").order_by("id")
    ]
    assert reasons[-3:] == ["new vendor", "ticket 42", "retired"]


@pytest.mark.parametrize(
    "reason", ["r" * 501, 42, ["a"], "bad\u202ereason", "nul\x07char"]
)
def test_a_bad_reason_is_a_400_naming_reason_and_writes_nothing(with_key, reason):
    client = with_key("curator")
    body = {"name": "r_tool", "parameters": weather_schema(), "reason": reason}
    response = client.post("/api/v1/tools/", body, format="json")
    assert response.status_code == 400, response.json()
    assert "reason" in response.json()["fields"]
    assert not Tool.objects.filter(name="r_tool").exists()


def test_a_too_long_reason_on_delete_keeps_the_tool(with_key):
    tool = make_tool(name="kept")
    response = with_key("curator").delete(
        f"/api/v1/tools/{tool.pk}/", {"reason": "r" * 501}, format="json"
    )
    assert response.status_code == 400
    assert "reason" in response.json()["fields"]
    assert Tool.objects.filter(pk=tool.pk).exists()
