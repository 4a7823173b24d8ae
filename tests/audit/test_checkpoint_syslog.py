"""The syslog sink: each checkpoint line reaches a real syslog socket as one RFC 5424
message, and a sink that is down never stops sealing or the checkpoint file."""

from __future__ import annotations

import json
import re
import socket
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from audit.hashing import signature_ok
from audit.models import AuditEvent
from audit.services import record_event, seal_and_checkpoint, verify_chain

pytestmark = pytest.mark.django_db

# <PRI>1 TIMESTAMP HOST APP PROCID MSGID SD MSG (RFC 5424, section 6)
RFC5424 = re.compile(
    r"<(?P<pri>\d{1,3})>1 (?P<time>\S+Z) (?P<host>\S+) (?P<app>\S+) (?P<pid>\d+) "
    r"(?P<msgid>\S+) - (?P<msg>.*)\Z",
    re.DOTALL,
)


def record(summary: str) -> AuditEvent:
    return record_event(
        "selection",
        actor=None,
        request_id=uuid.uuid4(),
        summary=summary,
        input={"query": summary},
        output={},
    )


def file_lines(path: Any) -> list[str]:
    return path.read_text().splitlines()


@pytest.fixture
def udp_syslog() -> Iterator[tuple[str, socket.socket]]:
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server.bind(("127.0.0.1", 0))
    server.settimeout(10)
    try:
        yield f"udp://127.0.0.1:{server.getsockname()[1]}", server
    finally:
        server.close()


@pytest.fixture
def tcp_syslog() -> Iterator[tuple[str, Callable[[], list[bytes]]]]:
    """A TCP syslog receiver that reads one connection's octet-counted frames
    (RFC 6587); the callable waits for the sender to close and returns them."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(10)
    frames: list[bytes] = []

    def serve() -> None:
        connection, _ = server.accept()
        with connection:
            data = b""
            while chunk := connection.recv(65536):
                data += chunk
        while data:
            length, _, rest = data.partition(b" ")
            frames.append(rest[: int(length)])
            data = rest[int(length) :]

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()

    def received() -> list[bytes]:
        thread.join(timeout=10)
        return frames

    try:
        yield f"tcp://127.0.0.1:{server.getsockname()[1]}", received
    finally:
        server.close()


def test_a_udp_syslog_server_receives_each_checkpoint_as_a_signed_line(
    settings, udp_syslog, audit_checkpoints_per_test
):
    url, server = udp_syslog
    settings.QUIVER_AUDIT_CHECKPOINT_SYSLOG = url
    settings.QUIVER_AUDIT_CHECKPOINT_SYSLOG_FACILITY = "auth"
    record("a")
    seal_and_checkpoint()
    message = RFC5424.match(server.recvfrom(65536)[0].decode())
    assert message is not None
    assert int(message["pri"]) == 4 * 8 + 5, "facility auth, severity notice"
    assert (message["app"], message["msgid"]) == ("quiver-audit", "checkpoint")
    assert message["msg"] == file_lines(audit_checkpoints_per_test)[0]
    line = json.loads(message["msg"])
    assert signature_ok(line)
    assert line["head_id"] == AuditEvent.objects.get(seq=1).pk


def test_a_tcp_syslog_server_receives_the_line_octet_counted(
    settings, tcp_syslog, audit_checkpoints_per_test
):
    url, received = tcp_syslog
    settings.QUIVER_AUDIT_CHECKPOINT_SYSLOG = url
    record("a")
    seal_and_checkpoint()
    [frame] = received()
    message = RFC5424.match(frame.decode())
    assert message is not None
    assert int(message["pri"]) == 16 * 8 + 5, "the default facility is local0"
    assert message["msg"] == file_lines(audit_checkpoints_per_test)[0]
    assert signature_ok(json.loads(message["msg"]))


def closed_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        return int(probe.getsockname()[1])


def test_a_sink_that_is_down_does_not_block_sealing_and_is_reported_behind(
    settings, audit_checkpoints_per_test
):
    settings.QUIVER_AUDIT_CHECKPOINT_SYSLOG = f"tcp://127.0.0.1:{closed_port()}"
    settings.QUIVER_AUDIT_CHECKPOINT_S3 = "s3://audit/checkpoints"
    settings.QUIVER_AUDIT_CHECKPOINT_S3_ENDPOINT = f"http://127.0.0.1:{closed_port()}"
    settings.QUIVER_AUDIT_CHECKPOINT_S3_ACCESS_KEY = "access"
    settings.QUIVER_AUDIT_CHECKPOINT_S3_SECRET_KEY = "secret"
    events = [record(str(n)) for n in range(3)]
    assert seal_and_checkpoint() == 3
    assert AuditEvent.objects.filter(hash__isnull=True).count() == 0
    [line] = file_lines(audit_checkpoints_per_test)
    assert json.loads(line)["head_id"] == events[-1].pk
    check = verify_chain()
    assert check.ok, check.problem
    assert check.sinks["syslog"]["behind"] and check.sinks["s3"]["behind"]
    assert check.sinks["syslog"]["failures"] == 1
    assert "ConnectionRefusedError" in check.sinks["syslog"]["last_error"]
    assert "ConnectError" in check.sinks["s3"]["last_error"]


def test_a_sink_that_comes_back_is_no_longer_behind(
    settings, udp_syslog, audit_checkpoints_per_test
):
    url, server = udp_syslog
    settings.QUIVER_AUDIT_CHECKPOINT_SYSLOG = f"tcp://127.0.0.1:{closed_port()}"
    record("while down")
    seal_and_checkpoint()
    assert verify_chain().sinks["syslog"]["behind"]
    settings.QUIVER_AUDIT_CHECKPOINT_SYSLOG = url
    record("back up")
    settings.QUIVER_AUDIT_CHECKPOINT_S = 0
    seal_and_checkpoint()
    server.recvfrom(65536)
    status = verify_chain().sinks["syslog"]
    assert (status["behind"], status["failures"]) == (False, 1)
