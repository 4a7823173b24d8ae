"""A /select answer's audit row commits on a writer thread while the answer is
rendered (audit.writer), and the answer never leaves before it has committed."""

from __future__ import annotations

import threading
import uuid

import pytest
from django.db import connection, transaction
from rest_framework.test import APIClient

from audit.models import AuditEvent
from audit.services import record_event_soon
from audit.writer import WRITERS
from tests.factories import make_client_key, make_sample_catalog, make_user

pytestmark = pytest.mark.django_db(transaction=True)

REFUSE = "refuse-this-row"


@pytest.fixture
def agent():
    make_sample_catalog()
    client = APIClient()
    key = make_client_key("writer-agent", "agent")
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def select(client, query):
    body = {"catalog": "default", "query": query, "explain": False}
    return client.post("/api/v1/select", body, format="json")


def writer_threads():
    return [t for t in threading.enumerate() if t.name.startswith("audit-writer")]


def test_the_answer_arrives_with_its_row_already_committed_by_a_writer_thread(agent):
    response = select(agent, "what's the weather like in Paris today?")
    assert response.status_code == 200, response.json()
    assert writer_threads(), "the row was written on the request's thread"
    row = AuditEvent.objects.get(selection_id=response.json()["selection_id"])
    assert row.event_type == "selection"
    assert row.output["tools"][0]["name"] == response.json()["tools"][0]["name"]
    waited = response["Server-Timing"]
    assert waited.startswith("audit_wait;dur=")
    assert float(waited.split("=")[1]) >= 0


def test_every_answer_of_a_burst_has_exactly_its_own_row(agent):
    ids = [
        select(agent, f"send an email about invoice {n}").json()["selection_id"]
        for n in range(12)
    ]
    assert len(set(ids)) == 12
    stored = AuditEvent.objects.filter(selection_id__in=ids).count()
    assert stored == 12


def test_a_row_the_database_refuses_withholds_the_answer_with_a_503_naming_audit(
    agent,
):
    with connection.cursor() as cursor:
        cursor.execute(
            "ALTER TABLE audit_auditevent ADD CONSTRAINT test_refuse_row "
            f"CHECK (position('{REFUSE}' in summary) = 0) NOT VALID"
        )
    try:
        before = AuditEvent.objects.count()
        response = select(agent, f"weather in Paris {REFUSE}")
        assert response.status_code == 503
        body = response.json()
        assert body["service"] == "audit"
        assert "not given" in body["detail"]
        assert "tools" not in body
        assert AuditEvent.objects.count() == before
        # The writer's connection is fine afterwards: the next answer is recorded.
        again = select(agent, "weather in Paris tomorrow")
        assert again.status_code == 200
        assert AuditEvent.objects.filter(
            selection_id=again.json()["selection_id"]
        ).exists()
    finally:
        with connection.cursor() as cursor:
            cursor.execute(
                "ALTER TABLE audit_auditevent DROP CONSTRAINT test_refuse_row"
            )


def test_inside_a_transaction_the_row_is_written_in_it_at_once():
    actor = make_user("tess")
    with transaction.atomic():
        handle = record_event_soon(
            "selection",
            actor=actor,
            request_id=uuid.uuid4(),
            summary="in a transaction",
            input={},
            output={},
            selection_id=uuid.uuid4(),
        )
        # Written here, in this transaction: visible before the commit.
        assert AuditEvent.objects.filter(summary="in a transaction").exists()
        assert handle.wait().summary == "in a transaction"


def other_connections():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid() "
            "AND backend_type = 'client backend'"
        )
        return cursor.fetchone()[0]


def test_stopping_the_writers_closes_their_connections(agent):
    before = other_connections()
    select(agent, "email the weekly report")
    assert writer_threads()
    assert other_connections() > before
    WRITERS.stop()
    assert not writer_threads()
    assert other_connections() == before
