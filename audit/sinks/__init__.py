"""Second copies of every checkpoint line, kept where the database's owner is not.

The checkpoint store (audit.checkpoint_store) is the record; each sink set in the
settings (a webhook, syslog, an S3 bucket) gets the same signed line too. A sink that
fails never stops sealing or a selection: the failure is logged, counted in the
store's ``sinks`` note, and verify reports the sink as behind.
The rules: docs/explanation/audit-chain.md, Checkpoint sinks.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any, Protocol

import httpx
from django.conf import settings

from audit.checkpoint_store import checkpoint_store

log = logging.getLogger(__name__)
Record = dict[str, Any]


class Sink(Protocol):
    name: str

    def send(self, record: Record, line: str) -> None:
        """Deliver one line or raise."""


class WebhookSink:
    name = "webhook"

    def __init__(self, url: str, timeout: float) -> None:
        self.url, self.timeout = url, timeout

    def send(self, record: Record, line: str) -> None:
        httpx.post(self.url, json=record, timeout=self.timeout).raise_for_status()


def configured_sinks() -> list[Sink]:
    from audit.sinks.s3 import bucket_from_settings
    from audit.sinks.syslog import SyslogSink

    timeout = float(settings.QUIVER_AUDIT_SINK_TIMEOUT_S)
    sinks: list[Sink] = []
    if settings.QUIVER_AUDIT_CHECKPOINT_URL:
        sinks.append(WebhookSink(settings.QUIVER_AUDIT_CHECKPOINT_URL, timeout))
    if settings.QUIVER_AUDIT_CHECKPOINT_SYSLOG:
        sinks.append(SyslogSink.from_settings())
    if settings.QUIVER_AUDIT_CHECKPOINT_S3:
        sinks.append(bucket_from_settings())
    return sinks


def line_of(record: Record) -> str:
    """The record exactly as the checkpoint store holds it (without the newline)."""
    return json.dumps(record, sort_keys=True)


def deliver(record: Record) -> None:
    """Hand the line to every sink; a failure is logged and counted, never raised."""
    line = line_of(record)
    for sink in configured_sinks():
        try:
            sink.send(record, line)
        except Exception as exc:  # the store holds the line; the sink is a copy
            log.warning(
                "audit checkpoint %s not delivered to the %s sink: %s",
                record.get("sig", "")[:12],
                sink.name,
                exc,
            )
            _note(sink.name, error=f"{type(exc).__name__}: {exc}")
        else:
            _note(sink.name, sent_sig=str(record["sig"]))


def _note(name: str, *, sent_sig: str = "", error: str = "") -> None:
    """Count a delivery in the store's ``sinks`` note."""
    now = datetime.now(UTC).isoformat()

    def count(state: Record) -> Record:
        entry = state.setdefault(name, {"failures": 0})
        if error:
            entry.update(failures=int(entry.get("failures", 0)) + 1, last_error=error)
            entry["last_error_time"] = now
        else:
            entry.update(sent_sig=sent_sig, sent_time=now)
        return state

    checkpoint_store().update_note("sinks", count)


def sink_status(last: Record | None) -> dict[str, Record]:
    """Each configured sink: failures so far, the last error, and whether it is
    behind (has not received ``last``, the store's last line)."""
    state = checkpoint_store().read_note("sinks")
    status: dict[str, Record] = {}
    for sink in configured_sinks():
        entry = state.get(sink.name, {})
        behind = last is not None and entry.get("sent_sig") != last.get("sig")
        status[sink.name] = {
            "behind": behind,
            "failures": int(entry.get("failures", 0)),
            "last_error": str(entry.get("last_error", "")),
            "last_error_time": entry.get("last_error_time"),
            "sent_time": entry.get("sent_time"),
        }
    return status
