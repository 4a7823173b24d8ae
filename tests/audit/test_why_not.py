"""GET /api/v1/audit/{id}/why-not?tool=NAME: by the record, or by an exact replay."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from catalog.models import Catalog, Tool
from catalog.services import delete_tool, update_tool
from tests.factories import make_sample_catalog, make_spec, make_tool

pytestmark = pytest.mark.django_db


@pytest.fixture
def catalog(db):
    return make_sample_catalog()


def selection_event(client, **body) -> AuditEvent:
    answer = client.post("/api/v1/select", body, format="json").json()
    return AuditEvent.objects.get(selection_id=answer["selection_id"])


def why(compliance, event, tool):
    return compliance.get(f"/api/v1/audit/{event.pk}/why-not?tool={tool}")


def test_a_named_exclusion_is_answered_from_the_record(with_key, catalog):
    event = selection_event(
        with_key("curator", name="cur"), query="delete the repository", explain=True
    )
    answer = why(with_key("compliance"), event, "delete_repository").json()
    assert (answer["outcome"], answer["source"]) == ("excluded", "record")
    assert answer["reason"] == "unsafe"


def test_an_unnamed_tool_is_found_by_an_exact_replay(with_key, catalog):
    agent = with_key("agent", name="agent", roles=["support"])
    event = selection_event(agent, query="what's the weather in Paris?")
    answer = why(with_key("compliance"), event, "refund_payment").json()
    assert answer["source"] == "replay"
    assert answer["reproduces"] is True
    assert answer["missing"] == []
    assert (answer["stage"], answer["reason"]) == ("policy", "hidden")


def test_the_replay_uses_the_catalog_as_it_was_then(with_key, catalog):
    agent = with_key("agent", name="agent")
    event = selection_event(agent, query="send an email to Bob")
    email = Tool.objects.get(name="send_email")
    update_tool(email, make_spec("send_email", description="Fax a letter."), actor=None)
    # Hidden from this agent (unsafe), so never named: only a replay can place it.
    delete_tool(Tool.objects.get(name="delete_repository"), actor=None)
    compliance = with_key("compliance")
    assert why(compliance, event, "send_email").json()["outcome"] == "picked"
    replayed = why(compliance, event, "delete_repository").json()
    assert (replayed["source"], replayed["reason"]) == ("replay", "hidden")
    assert replayed["reproduces"] is True


def test_a_tool_that_did_not_exist_then_is_named_so(with_key, catalog):
    event = selection_event(with_key("agent", name="agent"), query="weather")
    make_tool(name="brand_new_tool")
    answer = why(with_key("compliance"), event, "brand_new_tool").json()
    assert answer["outcome"] == "not_in_catalog"


def test_a_replay_that_cannot_be_exact_names_the_missing_input(with_key, catalog):
    agent = with_key("agent", name="agent")
    event = selection_event(agent, query="what's the weather in Paris?")
    Catalog.objects.filter(pk=catalog.pk).update(
        active_embedding_model="openai:text-embedding-3-small"
    )
    answer = why(with_key("compliance"), event, "delete_repository").json()
    assert answer["reproduces"] is False
    assert "text-embedding-3-small" in answer["missing"][0]


def test_why_not_needs_a_tool_name_and_the_compliance_scope(with_key, catalog):
    event = selection_event(with_key("agent", name="agent"), query="weather")
    assert why(with_key("compliance"), event, "").status_code == 400
    assert why(with_key("curator", name="c"), event, "x").status_code == 403


def test_a_selection_record_holds_the_caller_its_exclusions_and_an_input_hash(
    with_key, catalog
):
    agent = with_key("agent", name="support-bot", roles=["support"])
    event = selection_event(agent, query="refund the payment or delete the repo")
    caller = event.input["caller"]
    assert (caller["scope"], caller["client"], caller["roles"]) == (
        "agent",
        "support-bot",
        ["support"],
    )
    assert caller["allow_unsafe"] is False
    assert len(event.input["input_hash"]) == 64
    assert isinstance(event.output["excluded"], list)
    account = event.output["stats"]["account"]
    assert (
        sum(v for k, v in account.items() if k != "considered") == account["considered"]
    )
