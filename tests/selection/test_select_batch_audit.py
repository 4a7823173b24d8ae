"""A batch is one transaction: audit rows exist for exactly the answers sent."""

from __future__ import annotations

import json

import pytest

from audit.models import AuditEvent
from tests.factories import make_sample_catalog

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent(with_key, db):
    make_sample_catalog()
    return with_key("agent", roles=["support"])


def answered(results):
    return [result for result in results if "error" not in result]


def test_an_item_that_cannot_be_stored_is_answered_in_place_and_leaves_no_row(agent):
    before = AuditEvent.objects.count()
    response = agent.post(
        "/api/v1/select/batch",
        {"requests": [{"query": "weather"}, {"query": "email"}, {"query": "a\x00b"}]},
        format="json",
    )
    assert response.status_code == 200, response.content
    results = response.json()["results"]
    assert len(answered(results)) == 2
    assert "error" in results[2]
    assert "requests[2]" in results[2]["detail"]
    assert AuditEvent.objects.count() - before == 2


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
