"""A batch is one transaction: audit rows exist for exactly the answers sent."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from django.db import connection

from audit.models import AuditEvent
from tests.factories import make_sample_catalog

pytestmark = pytest.mark.django_db

MARK = "explode-me"


@pytest.fixture
def agent(with_key, db):
    make_sample_catalog()
    return with_key("agent", roles=["support"])


@pytest.fixture
def audit_refuses_marked_rows(db) -> Iterator[None]:
    """A real database failure on one item's audit insert (as Postgres refused
    the NUL byte of the original finding): a trigger raises for rows whose input
    holds MARK. Created inside the test's transaction, so it goes with it."""
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE FUNCTION test_refuse_marked() RETURNS trigger AS $$ BEGIN "
            f"IF NEW.input::text LIKE '%{MARK}%' THEN "
            "RAISE EXCEPTION 'refused by the test trigger'; END IF; "
            "RETURN NEW; END $$ LANGUAGE plpgsql"
        )
        cursor.execute(
            "CREATE TRIGGER test_refuse_marked BEFORE INSERT ON audit_auditevent "
            "FOR EACH ROW EXECUTE FUNCTION test_refuse_marked()"
        )
    yield


def answered(results):
    return [result for result in results if "error" not in result]


def test_an_item_that_cannot_be_recorded_is_answered_in_place_and_leaves_no_row(
    agent, audit_refuses_marked_rows
):
    before = AuditEvent.objects.count()
    response = agent.post(
        "/api/v1/select/batch",
        {"requests": [{"query": "weather"}, {"query": "email"}, {"query": MARK}]},
        format="json",
    )
    assert response.status_code == 200, response.content
    results = response.json()["results"]
    assert len(answered(results)) == 2
    assert results[2]["error"] == "item_failed"
    assert results[2]["detail"].startswith("requests[2]")
    assert AuditEvent.objects.count() - before == 2


def test_a_batch_with_a_nul_byte_is_refused_whole_and_records_nothing(agent):
    before = AuditEvent.objects.count()
    response = agent.post(
        "/api/v1/select/batch",
        {"requests": [{"query": "weather"}, {"query": "email"}, {"query": "a\x00b"}]},
        format="json",
    )
    assert 400 <= response.status_code < 500
    assert AuditEvent.objects.count() == before


def test_a_batch_whose_answer_cannot_be_sent_leaves_no_audit_rows(agent, monkeypatch):
    from rest_framework.renderers import JSONRenderer

    def broken(*args, **kwargs):
        raise RuntimeError("the answer could not be rendered")

    before = AuditEvent.objects.count()
    monkeypatch.setattr(JSONRenderer, "render", broken)
    agent.raise_request_exception = False
    body = json.dumps({"requests": [{"query": "weather"}, {"query": "email"}]})
    response = agent.post("/api/v1/select/batch", body, content_type="application/json")
    assert response.status_code == 500
    assert AuditEvent.objects.count() == before
