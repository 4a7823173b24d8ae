"""The syslog sink: each checkpoint line as one RFC 5424 message.

``QUIVER_AUDIT_CHECKPOINT_SYSLOG`` is ``udp://host[:514]`` (one datagram),
``tcp://host[:601]`` (octet-counted framing, RFC 6587) or ``unix:///dev/log`` (a
local datagram socket). The message is ``<PRI>1 TIMESTAMP HOST quiver-audit PID KIND
- LINE``: facility ``QUIVER_AUDIT_CHECKPOINT_SYSLOG_FACILITY`` (default local0),
severity notice, MSGID the line's kind (checkpoint, archive, rotation), no
structured data, and the signed JSON line itself as the message (ASCII), so the
receiver can check it with the audit key.
"""

from __future__ import annotations

import errno
import os
import socket
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlparse

from django.conf import settings

APP_NAME = "quiver-audit"
NOTICE = 5
DEFAULT_PORTS = {"udp": 514, "tcp": 601}


def message(record: dict[str, Any], line: str, facility: int) -> bytes:
    """The RFC 5424 message carrying ``line``."""
    stamp = datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
    host = socket.gethostname().replace(" ", "")[:255] or "-"
    kind = str(record.get("kind", "checkpoint"))[:32] or "-"
    pri = facility * 8 + NOTICE
    return f"<{pri}>1 {stamp} {host} {APP_NAME} {os.getpid()} {kind} - {line}".encode()


class SyslogSink:
    name = "syslog"

    def __init__(self, url: str, facility: str, timeout: float) -> None:
        self.url = urlparse(url)
        self.facility = settings.SYSLOG_FACILITIES[facility]
        self.timeout = timeout

    @classmethod
    def from_settings(cls) -> SyslogSink:
        return cls(
            settings.QUIVER_AUDIT_CHECKPOINT_SYSLOG,
            settings.QUIVER_AUDIT_CHECKPOINT_SYSLOG_FACILITY,
            float(settings.QUIVER_AUDIT_SINK_TIMEOUT_S),
        )

    def send(self, record: dict[str, Any], line: str) -> None:
        data = message(record, line, self.facility)
        scheme = self.url.scheme
        if scheme == "unix":
            self._unix(data)
            return
        address = (self.url.hostname or "", self.url.port or DEFAULT_PORTS[scheme])
        if scheme == "udp":
            family, kind, proto, _, target = socket.getaddrinfo(
                *address, type=socket.SOCK_DGRAM
            )[0]
            with socket.socket(family, kind, proto) as sock:
                sock.settimeout(self.timeout)
                sock.sendto(data, target)
            return
        with socket.create_connection(address, timeout=self.timeout) as sock:
            sock.sendall(_framed(data))

    def _unix(self, data: bytes) -> None:
        """A datagram to the local socket; a stream socket gets the framed form."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.settimeout(self.timeout)
            try:
                sock.connect(self.url.path)
            except OSError as exc:
                if exc.errno != errno.EPROTOTYPE:
                    raise
            else:
                sock.send(data)
                return
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(self.timeout)
            sock.connect(self.url.path)
            sock.sendall(_framed(data))


def _framed(data: bytes) -> bytes:
    """RFC 6587 octet counting: the length, a space, the message."""
    return str(len(data)).encode() + b" " + data
