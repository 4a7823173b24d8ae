"""Signed checkpoints: written at a fixed cadence, outside the database."""

from __future__ import annotations

import hashlib
import json
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection

from audit.checkpoints import checkpoint_if_due, read_book
from audit.hashing import signature_ok
from audit.models import AuditEvent
from audit.services import record_event, seal_and_checkpoint, verify_chain

pytestmark = pytest.mark.django_db


def record(summary: str) -> AuditEvent:
    return record_event(
        "selection",
        actor=None,
        request_id=uuid.uuid4(),
        summary=summary,
        input={"query": summary},
        output={},
    )


def lines(path: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_first_round_writes_a_signed_checkpoint_of_the_head(
    audit_checkpoints_per_test,
):
    events = [record(str(n)) for n in range(3)]
    seal_and_checkpoint()
    [checkpoint] = lines(audit_checkpoints_per_test)
    assert checkpoint["head_id"] == events[-1].pk
    assert (checkpoint["head_seq"], checkpoint["count"]) == (3, 3)
    assert checkpoint["head_hash"] == AuditEvent.objects.get(pk=events[-1].pk).hash
    assert signature_ok(checkpoint)


def test_a_checkpoint_waits_for_n_events_or_t_seconds(
    settings, audit_checkpoints_per_test
):
    settings.QUIVER_AUDIT_CHECKPOINT_EVERY = 5
    settings.QUIVER_AUDIT_CHECKPOINT_S = 3600
    record("first")
    seal_and_checkpoint()
    for n in range(4):
        record(str(n))
    seal_and_checkpoint()
    assert len(lines(audit_checkpoints_per_test)) == 1
    record("fifth since the checkpoint")
    seal_and_checkpoint()
    assert [c["head_seq"] for c in lines(audit_checkpoints_per_test)] == [1, 6]
    settings.QUIVER_AUDIT_CHECKPOINT_S = 0
    seal_and_checkpoint()
    assert len(lines(audit_checkpoints_per_test)) == 2, "no new events, no checkpoint"
    record("one more")
    seal_and_checkpoint()
    assert [c["head_seq"] for c in lines(audit_checkpoints_per_test)] == [1, 6, 7]


def test_each_checkpoint_line_carries_the_signature_of_the_one_before(
    audit_checkpoints_per_test,
):
    record("a")
    seal_and_checkpoint()
    record("b")
    seal_and_checkpoint()
    checkpoint_if_due(force=True)
    first, second = lines(audit_checkpoints_per_test)
    assert second["prev_sig"] == first["sig"]
    assert read_book(audit_checkpoints_per_test).problem == ""


@pytest.fixture
def webhook() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    received: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers["Content-Length"])
            received.append(json.loads(self.rfile.read(length)))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/checkpoints", received
    finally:
        server.shutdown()


def test_a_checkpoint_is_also_posted_to_the_webhook_when_one_is_set(
    settings, webhook, audit_checkpoints_per_test
):
    url, received = webhook
    settings.QUIVER_AUDIT_CHECKPOINT_URL = url
    record("a")
    seal_and_checkpoint()
    assert received == lines(audit_checkpoints_per_test)
    assert signature_ok(received[0])


def test_a_webhook_that_is_down_does_not_stop_the_checkpoint_file(
    settings, audit_checkpoints_per_test
):
    settings.QUIVER_AUDIT_CHECKPOINT_URL = "http://127.0.0.1:9/down"
    record("a")
    seal_and_checkpoint()
    assert len(lines(audit_checkpoints_per_test)) == 1


def _old_event_hash(event: AuditEvent, prev_hash: str) -> str:
    """The hash as Quiver computed it before keyed hashing (version 1)."""

    def canonical(value: Any) -> str:
        return json.dumps(
            value, sort_keys=True, separators=(",", ":"), cls=DjangoJSONEncoder
        )

    body = {
        "event_type": event.event_type,
        "actor_name": event.actor_name,
        "request_id": str(event.request_id),
        "catalog_slug": event.catalog_slug,
        "catalog_version": event.catalog_version,
        "summary": event.summary,
        "input": event.input,
        "output": event.output,
        "created": event.created.isoformat(),
        "prev_hash": prev_hash,
    }
    return hashlib.sha256(canonical(body).encode()).hexdigest()


def test_rows_hashed_before_keyed_hashing_still_verify_and_chain_on(
    audit_checkpoints_per_test,
):
    legacy = [record("old 1"), record("old 2")]
    prev = "0" * 64
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE audit_auditevent DISABLE TRIGGER USER")
        for seq, event in enumerate(legacy, start=1):
            event.refresh_from_db()
            digest = _old_event_hash(event, prev)
            cursor.execute(
                "UPDATE audit_auditevent SET seq = %s, prev_hash = %s, hash = %s, "
                "hash_version = 1 WHERE id = %s",
                [seq, prev, digest, event.pk],
            )
            prev = digest
        cursor.execute("ALTER TABLE audit_auditevent ENABLE TRIGGER USER")
    record("new")
    seal_and_checkpoint()
    newest = AuditEvent.objects.get(seq=3)
    assert (newest.hash_version, newest.prev_hash) == (2, prev)
    check = verify_chain()
    assert check.ok, check.problem
    assert check.checked == 3
