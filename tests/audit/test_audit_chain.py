"""The audit log: append-only (model and database) and tamper-evident."""

from __future__ import annotations

import uuid

import pytest
from django.db import DatabaseError, connection, transaction

from audit.models import AppendOnlyError, AuditEvent
from audit.services import record_event, seal_pending, verify_chain

pytestmark = pytest.mark.django_db


def record(summary: str) -> AuditEvent:
    return record_event(
        "selection",
        actor=None,
        request_id=uuid.uuid4(),
        catalog_slug="default",
        catalog_version=1,
        summary=summary,
        input={"query": summary},
        output={"tools": []},
    )


def test_each_event_chains_to_the_previous_one_once_sealed():
    first, second = record("a"), record("b")
    assert first.hash is None
    seal_pending()
    first.refresh_from_db()
    second.refresh_from_db()
    assert second.prev_hash == first.hash
    assert (first.seq, second.seq) == (1, 2)
    assert verify_chain().ok
    assert verify_chain().checked == 2


def test_an_event_cannot_be_changed_or_deleted_through_the_model():
    event = record("a")
    with pytest.raises(AppendOnlyError):
        event.save()
    with pytest.raises(AppendOnlyError):
        event.delete()


def test_the_database_refuses_an_update_behind_the_models_back():
    record("a")
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEvent.objects.update(summary="forged")


def test_a_forged_row_breaks_the_chain_check():
    record("a")
    forged = record("b")
    seal_pending()
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE audit_auditevent DISABLE TRIGGER USER")
        cursor.execute(
            "UPDATE audit_auditevent SET summary = 'forged' WHERE id = %s", [forged.pk]
        )
        cursor.execute("ALTER TABLE audit_auditevent ENABLE TRIGGER USER")
    check = verify_chain()
    assert not check.ok
    assert check.first_bad_id == forged.pk
