"""Labels proposed from use: a selection whose offered tool was then validly
called (tool-calls/validate, or run through Quiver: a tool_call event with
outcome "ran") is proposed once, counts only once a curator accepts it, and
each step is audited."""

from __future__ import annotations

import json
import uuid

import pytest

from audit.choices import EventType
from audit.models import AuditEvent
from audit.services import record_event
from catalog.models import Catalog
from learning.models import Label, LabelStatus
from learning.services.proposals import find_proposals
from learning.tasks import find_label_proposals
from tests.factories import make_tool

pytestmark = pytest.mark.django_db

GOOD = {"city": "Paris", "unit": "celsius"}


@pytest.fixture
def agent(with_key, db):
    make_tool(name="get_weather", description="Get the current weather for a city.")
    make_tool(name="send_email", description="Send an email message.")
    return with_key("agent")


@pytest.fixture
def catalog(agent):
    return Catalog.objects.get(slug="default")


def select(client, query="weather in Paris"):
    body = {"query": query, "scorer": "keyword", "max_candidates": 1}
    response = client.post("/api/v1/select", body, format="json")
    assert response.status_code == 200, response.json()
    return response.json()["selection_id"]


def validate(client, selection_id, name="get_weather", arguments=GOOD):
    output = {"type": "function_call", "name": name,
              "arguments": json.dumps(arguments), "call_id": "c1"}  # fmt: skip
    body = {"output": output, "selection_id": selection_id}
    response = client.post("/api/v1/tool-calls/validate", body, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def proposals_events():
    return AuditEvent.objects.filter(
        event_type=EventType.LABELS_CHANGED, input__action="propose"
    )


def test_a_validly_called_offered_tool_is_proposed_once(agent, catalog):
    selection_id = select(agent)
    assert validate(agent, selection_id)["valid"] is True
    assert find_proposals(catalog) == 1
    label = Label.objects.get()
    assert (label.query, label.tools) == ("weather in Paris", ["get_weather"])
    assert (label.origin, label.status) == ("use", "proposed")
    assert str(label.selection_id) == selection_id
    assert find_proposals(catalog) == 0
    assert find_label_proposals() == 0
    assert Label.objects.count() == 1
    assert proposals_events().count() == 1


def test_an_invalid_call_or_a_tool_not_offered_is_not_proposed(agent, catalog):
    bad = select(agent)
    assert validate(agent, bad, arguments={"unit": "kelvin"})["valid"] is False
    other = select(agent, "weather in Rome")
    validate(agent, other, name="send_email", arguments={"city": "x"})
    assert find_proposals(catalog) == 0
    assert not Label.objects.exists()
    assert not proposals_events().exists()


def test_a_call_run_through_quiver_is_evidence_too(agent, catalog):
    selection_id = select(agent, "weather in Oslo")
    for outcome in ("refused", "ran"):
        record_event(
            EventType.TOOL_CALL,
            actor=None,
            request_id=uuid.uuid4(),
            catalog_slug="default",
            summary=f"get_weather {outcome}",
            input={"tool": "get_weather", "selection_id": selection_id},
            output={"outcome": outcome},
        )
    assert find_proposals(catalog) == 1
    assert Label.objects.get().query == "weather in Oslo"


def test_a_refused_run_alone_proposes_nothing(agent, catalog):
    selection_id = select(agent, "weather in Oslo")
    record_event(
        EventType.TOOL_CALL,
        actor=None,
        request_id=uuid.uuid4(),
        catalog_slug="default",
        summary="get_weather failed",
        input={"tool": "get_weather", "selection_id": selection_id},
        output={"outcome": "failed"},
    )
    assert find_proposals(catalog) == 0


def test_a_request_already_labelled_is_not_proposed(agent, catalog):
    Label.objects.create(
        catalog=catalog, query="weather in Paris", tools=["get_weather"]
    )
    validate(agent, select(agent))
    assert find_proposals(catalog) == 0


def test_proposals_count_only_once_accepted_on_the_review_page(
    agent, catalog, client, curator
):
    validate(agent, select(agent))
    client.force_login(curator)
    found = client.post("/catalogs/default/labels/review/", {"action": "find"})
    assert found.status_code == 302
    label = Label.objects.get()
    accepted = Label.objects.filter(status=LabelStatus.ACCEPTED)
    assert not accepted.exists()
    page = client.get("/catalogs/default/labels/review/")
    assert "weather in Paris" in page.content.decode()
    client.post(
        "/catalogs/default/labels/review/", {"action": "accept", "ids": [label.pk]}
    )
    assert list(accepted) == [label]
    events = AuditEvent.objects.filter(event_type=EventType.LABELS_CHANGED).order_by(
        "id"
    )
    assert [e.input["action"] for e in events] == ["propose", "accept"]
    assert events[0].actor_name == curator.username
    assert events[1].output == {"accepted": 1}


def test_a_selection_of_another_catalog_is_not_proposed_here(agent, catalog):
    selection_id = select(agent)
    validate(agent, selection_id)
    other = Catalog.objects.create(slug="other", name="Other")
    assert find_proposals(other) == 0
    assert find_proposals(catalog) == 1
