"""Writes take no lock and commit with their change; the sealer orders them."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.db import connections, transaction

from audit.models import AuditEvent
from audit.sealing import start_sealer_thread
from audit.services import record_event, seal_pending, verify_chain
from tests.conftest import wait_until


def record(summary: str) -> AuditEvent:
    return record_event(
        "selection",
        actor=None,
        request_id=uuid.uuid4(),
        catalog_slug="default",
        summary=summary,
        input={"query": summary},
        output={},
    )


@contextmanager
def open_transaction_with_an_event(summary: str) -> Iterator[dict[str, int]]:
    """Another connection appends an event and keeps its transaction open while
    inside; it commits on leaving."""
    written, finish, seen = threading.Event(), threading.Event(), {}

    def writer() -> None:
        with transaction.atomic():
            seen["id"] = record(summary).pk
            written.set()
            finish.wait(timeout=30)
        connections.close_all()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert written.wait(timeout=10)
        yield seen
    finally:
        finish.set()
        thread.join()


def test_an_event_rolled_back_with_its_change_leaves_no_row(db):
    before = AuditEvent.objects.count()
    with pytest.raises(RuntimeError), transaction.atomic():
        record("part of a change that failed")
        raise RuntimeError("the change failed")
    assert AuditEvent.objects.count() == before
    assert verify_chain().ok


def test_a_new_event_is_unsealed_until_the_sealer_runs(db):
    event = record("a")
    assert (event.seq, event.hash, event.prev_hash) == (None, None, "")
    assert seal_pending() == 1
    event.refresh_from_db()
    assert event.seq == 1 and len(event.hash or "") == 64


def test_a_sealed_row_cannot_be_sealed_again_or_changed_while_sealing(db):
    from django.db import DatabaseError

    event = record("a")
    seal_pending()
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEvent.objects.filter(pk=event.pk).update(hash="0" * 64, seq=99)
    other = record("b")
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEvent.objects.filter(pk=other.pk).update(
            hash="1" * 64, seq=2, summary="and a little edit"
        )


def test_transactions_committing_out_of_id_order_still_make_a_valid_chain(
    transactional_db,
):
    with open_transaction_with_an_event("slow") as slow:
        fast = record("fast")
        assert slow["id"] < fast.pk
        assert seal_pending() == 1
    assert seal_pending() == 1
    order = list(AuditEvent.objects.order_by("seq").values_list("id", flat=True))
    assert order == [fast.pk, slow["id"]]
    check = verify_chain()
    assert check.ok, check.problem
    assert check.checked == 2


def test_eight_concurrent_writers_with_a_sealer_running_make_one_valid_chain(
    transactional_db, audit_checkpoints_per_test
):
    def write(n: int) -> None:
        for i in range(10):
            with transaction.atomic():
                record(f"writer {n} event {i}")
        connections.close_all()

    sealer = start_sealer_thread(0.05)
    try:
        writers = [threading.Thread(target=write, args=(n,)) for n in range(8)]
        for writer in writers:
            writer.start()
        for writer in writers:
            writer.join()
        wait_until(
            lambda: not AuditEvent.objects.filter(hash__isnull=True).exists(),
            timeout=20,
            what="the sealer to seal every row",
        )
    finally:
        sealer.stop()
    check = verify_chain(seal=False)
    assert check.ok, check.problem
    assert check.checked == 80
    assert audit_checkpoints_per_test.exists()
