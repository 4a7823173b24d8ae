"""A /select answer's audit row is sent before the answer is rendered, on a
connection of its own (audit.writer), and the answer never leaves before the row
has committed."""

from __future__ import annotations

import time
import uuid

import pytest
from django.db import connection, transaction
from rest_framework.test import APIClient

from audit.models import AuditEvent
from audit.services import record_event
from audit.writer import close_all
from config.fast import beside
from tests.factories import make_client_key, make_sample_catalog, make_user

pytestmark = pytest.mark.django_db(transaction=True)

REFUSE = "refuse-this-row"


@pytest.fixture
def agent():
    make_sample_catalog()
    client = APIClient()
    key = make_client_key("early-agent", "agent")
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def select(client, query):
    body = {"catalog": "default", "query": query, "explain": False}
    return client.post("/api/v1/select", body, format="json")


def other_connections():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid() "
            "AND backend_type = 'client backend'"
        )
        return cursor.fetchone()[0]


def test_the_answer_arrives_with_its_row_committed_by_a_connection_of_its_own(agent):
    before = other_connections()
    response = select(agent, "what's the weather like in Paris today?")
    assert response.status_code == 200, response.json()
    assert other_connections() == before + 1, "the row went over the request's"
    row = AuditEvent.objects.get(selection_id=response.json()["selection_id"])
    assert row.event_type == "selection"
    first = response.json()["tools"][0]["name"]
    assert row.output["tools"][0]["name"] == first
    assert row.search_tokens == []  # the sealer fills them (audit 0012)
    waited = response["Server-Timing"]
    assert waited.startswith("audit_wait;dur=")
    assert float(waited.split("=")[1]) >= 0


def test_the_row_sent_early_is_the_row_written_first(agent, settings):
    early = select(agent, "send an email to Bob about the invoice").json()
    settings.QUIVER_AUDIT_SEND_EARLY = False
    first = select(agent, "send an email to Bob about the invoice").json()
    rows = {
        row.selection_id.hex: row
        for row in AuditEvent.objects.filter(
            selection_id__in=[early["selection_id"], first["selection_id"]]
        )
    }
    a = rows[uuid.UUID(early["selection_id"]).hex]
    b = rows[uuid.UUID(first["selection_id"]).hex]
    same = ("event_type", "actor_id", "actor_name", "catalog_slug", "summary")
    assert [getattr(a, f) for f in same] == [getattr(b, f) for f in same]
    assert a.input == b.input
    assert a.output["tools"] == b.output["tools"]
    assert a.seq is None and a.hash is None  # sealed later, like every row


def test_every_answer_of_a_burst_has_exactly_its_own_row(agent):
    ids = [
        select(agent, f"send an email about invoice {n}").json()["selection_id"]
        for n in range(12)
    ]
    assert len(set(ids)) == 12
    assert AuditEvent.objects.filter(selection_id__in=ids).count() == 12


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
        assert body["retryable"] is False
        assert "tools" not in body
        assert AuditEvent.objects.count() == before
        # The audit connection is fine afterwards: the next answer is recorded.
        again = select(agent, "weather in Paris tomorrow")
        assert again.status_code == 200
        selection_id = again.json()["selection_id"]
        assert AuditEvent.objects.filter(selection_id=selection_id).exists()
    finally:
        with connection.cursor() as cursor:
            cursor.execute(
                "ALTER TABLE audit_auditevent DROP CONSTRAINT test_refuse_row"
            )


def test_a_lost_audit_connection_is_replaced_before_it_carries_a_row(agent):
    select(agent, "email the weekly report")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid() "
            "AND backend_type = 'client backend'"
        )
    connection.close()
    beside.sender("audit")._last_used = 0.0  # idle long enough to be checked
    response = select(agent, "email the monthly report")
    assert response.status_code == 200, response.json()
    selection_id = response.json()["selection_id"]
    assert AuditEvent.objects.filter(selection_id=selection_id).exists()


def test_inside_a_transaction_the_row_is_written_in_it_at_once():
    actor = make_user("tess")
    with transaction.atomic():
        handle = record_event(
            "selection",
            soon=True,
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


def test_closing_the_audit_connections_leaves_none_open(agent):
    before = other_connections()
    select(agent, "email the weekly report")
    assert other_connections() == before + 1
    close_all()
    # A backend leaves pg_stat_activity a moment after its client hangs up.
    deadline = time.monotonic() + 5
    while other_connections() != before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert other_connections() == before
