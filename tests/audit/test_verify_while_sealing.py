"""Verify and the audit list stay answerable while a sealer holds the chain lock
(a backlog being sealed), and a check that would outrun the web server's worker
timeout answers a JSON 503 naming verify instead (issue 20)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.db import connection, connections, transaction

from audit.models import AuditEvent
from audit.sealing import take_chain_lock
from audit.services import record_event, seal_pending, verify_chain

HELD_S = 60


def record(summary: str) -> AuditEvent:
    return record_event(
        "selection",
        actor=None,
        request_id=uuid.uuid4(),
        catalog_slug="default",
        summary=summary,
        input={"request": {"query": summary}},
        output={},
    )


@contextmanager
def a_sealer_holding_the_chain_lock() -> Iterator[None]:
    """Another connection takes the chain lock, as a sealer at work does, and
    keeps it until the block ends (or ``HELD_S``)."""
    held, release = threading.Event(), threading.Event()

    def sealer() -> None:
        with transaction.atomic(), connection.cursor() as cursor:
            take_chain_lock(cursor, wait=True)
            held.set()
            release.wait(timeout=HELD_S)
        connections.close_all()

    thread = threading.Thread(target=sealer)
    thread.start()
    try:
        assert held.wait(timeout=10)
        yield
    finally:
        release.set()
        thread.join()


def timed(call):  # type: ignore[no-untyped-def]
    started = time.monotonic()
    result = call()
    return result, time.monotonic() - started


def test_verify_answers_while_a_sealer_holds_the_lock(transactional_db):
    for n in range(3):
        record(f"sealed {n}")
    seal_pending()
    record("waiting for the sealer")
    with a_sealer_holding_the_chain_lock():
        check, seconds = timed(verify_chain)
    assert seconds < 10  # the lock is held for HELD_S: waiting for it fails here
    assert check.ok, check.problem
    assert check.checked == 3


def test_the_verify_api_answers_while_a_sealer_holds_the_lock(
    transactional_db, with_key
):
    api = with_key("compliance")
    record("one")
    seal_pending()
    with a_sealer_holding_the_chain_lock():
        response, seconds = timed(lambda: api.get("/api/v1/audit/verify"))
    assert seconds < 10
    assert response.status_code == 200
    assert response.json()["ok"] is True


def test_the_audit_list_answers_while_a_sealer_holds_the_lock(
    transactional_db, with_key
):
    api = with_key("compliance")
    record("one")
    with a_sealer_holding_the_chain_lock():
        response, seconds = timed(lambda: api.get("/api/v1/audit/?q=one"))
    assert seconds < 10
    assert response.status_code == 200
    assert response.json()["count"] == 1


@pytest.fixture
def no_time_to_verify(monkeypatch):
    import compliance.api.views
    import compliance.views

    monkeypatch.setattr(compliance.api.views, "WEB_DEADLINE_S", 0.0)
    monkeypatch.setattr(compliance.views, "WEB_DEADLINE_S", 0.0)


def test_a_verify_past_its_deadline_is_a_json_503_naming_verify(
    db, with_key, no_time_to_verify
):
    record("one")
    response = with_key("compliance").get("/api/v1/audit/verify")
    assert response.status_code == 503
    body = response.json()
    assert body["error"] == "too_slow"
    assert body["detail"].startswith("verify:")
    assert body["retryable"] is False


def test_the_console_says_the_check_was_stopped(db, as_compliance, no_time_to_verify):
    record("one")
    response = as_compliance.post("/audit/verify/", HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert b'data-testid="verify-too-slow"' in response.content
    assert b"verify: the chain was not checked within 0 s" in response.content


def test_without_a_deadline_the_command_checks_the_whole_chain(db):
    for n in range(5):
        record(f"event {n}")
    check = verify_chain(batch=2)
    assert check.ok and check.checked == 5
