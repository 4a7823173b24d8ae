"""A sealer process of its own (``audit_seal --every``), as a cluster runs it beside
workers that leave sealing to it (``QUIVER_AUDIT_SEALER_IN_WORKERS=false``)."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from audit.models import AuditEvent, CheckpointLine
from audit.services import record_event, verify_chain
from audit.tasks import _start_audit_sealer
from tests.conftest import ROOT, wait_until, worker_env

pytestmark = [pytest.mark.integration]


def record(n: int) -> AuditEvent:
    return record_event(
        "selection",
        actor=None,
        request_id=uuid.uuid4(),
        summary=f"event {n}",
        input={"n": n},
        output={},
    )


def test_the_sealer_process_seals_checkpoints_beats_and_stops_on_sigterm(
    transactional_db, settings, tmp_path: Path
):
    settings.QUIVER_AUDIT_CHECKPOINT_STORE = "postgres"
    beat = tmp_path / "sealer.beat"
    env = {**worker_env(), "QUIVER_AUDIT_CHECKPOINT_STORE": "postgres"}
    process = subprocess.Popen(
        [sys.executable, "manage.py", "audit_seal", "--every", "0.5",
         "--heartbeat", str(beat)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        events = [record(n) for n in range(3)]
        ids = [event.pk for event in events]
        wait_until(
            lambda: (
                AuditEvent.objects.filter(pk__in=ids, hash__isnull=False).count() == 3
            ),
            timeout=90,  # the process starting (Django, the model's imports) too
            what="the sealer process to seal the events",
        )
        wait_until(CheckpointLine.objects.exists, timeout=30, what="a checkpoint")
        wait_until(beat.exists, timeout=30, what="the heartbeat")
    finally:
        process.send_signal(signal.SIGTERM)
        output = process.communicate(timeout=30)[0].decode()
    assert process.returncode == 0, output
    assert "Sealer stopped." in output
    check = verify_chain(seal=False)
    assert check.ok, check.problem
    assert (check.checked, check.checkpoints) == (3, "postgres")


def test_a_sealer_needs_a_positive_interval():
    with pytest.raises(CommandError, match="--every"):
        call_command("audit_seal", every=0)


def sealer_threads() -> int:
    return sum(thread.name == "audit-sealer" for thread in threading.enumerate())


def test_a_worker_told_to_leave_sealing_starts_no_sealer(settings):
    settings.QUIVER_AUDIT_SEALER_IN_WORKERS = False
    before = sealer_threads()
    _start_audit_sealer()
    assert sealer_threads() == before
