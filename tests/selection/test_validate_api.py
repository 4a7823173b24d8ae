"""POST /api/v1/validate: a model's tool call checked against the canonical schema."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from tests.factories import make_tool

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent(with_key):
    make_tool(name="get_weather")
    make_tool(
        name="ping_server",
        parameters=None,
        allow_no_schema=True,
        no_schema_mode="read-only",
    )
    return with_key("agent")


def validate(client, **body):
    return client.post("/api/v1/validate", body, format="json")


def test_valid_arguments_pass_and_are_returned(agent):
    response = validate(agent, tool="get_weather", arguments={"city": "Paris"})
    assert response.status_code == 200
    body = response.json()
    assert body["valid"] is True
    assert body["arguments"] == {"city": "Paris"}


def test_a_json_string_is_parsed_first(agent):
    body = validate(agent, tool="get_weather", arguments='{"city": "Oslo"}').json()
    assert body["valid"] is True


def test_each_schema_error_names_its_pointer_and_rule(agent):
    body = validate(
        agent, tool="get_weather", arguments={"city": 3, "unit": "kelvin"}
    ).json()
    assert body["valid"] is False
    found = {(e["pointer"], e["rule"]) for e in body["errors"]}
    assert ("/city", "type") in found
    assert ("/unit", "enum") in found


def test_unparseable_arguments_are_a_parse_error(agent):
    body = validate(agent, tool="get_weather", arguments="{city: ").json()
    assert body["valid"] is False
    assert body["errors"][0]["rule"] == "parse"


def test_a_no_schema_tool_is_flagged_not_validated(agent):
    body = validate(agent, tool="ping_server", arguments={}).json()
    assert body["validated"] is False
    assert body["no_schema_mode"] == "read-only"


def test_an_unknown_tool_is_a_404_naming_the_tool(agent):
    response = validate(agent, tool="nope", arguments={})
    assert response.status_code == 404
    assert response.json()["detail"].startswith("tool:")


def test_every_validation_is_audited(agent):
    validate(agent, tool="get_weather", arguments={"city": "Paris"})
    event = AuditEvent.objects.get(event_type="validation")
    assert event.output["valid"] is True
