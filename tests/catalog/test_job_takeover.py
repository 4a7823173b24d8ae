"""A worker killed mid-import: the next worker to start takes the job over at
once (its old worker's pid is gone from this host), not after the lease."""

from __future__ import annotations

import time

import pytest

from catalog.models import Tool
from catalog.services import ensure_default_catalog
from catalog.services.imports import start_import
from jobs.models import Job
from tests.conftest import start_worker, stop_worker, wait_until
from tests.factories import make_user

pytestmark = [pytest.mark.integration]

# A lease far longer than the test may take: only the dead-pid check can explain
# a quick takeover.
LONG_LEASE = {"QUIVER_JOB_LEASE_S": "120"}
NO_EMBED_IN_STEP = {"QUIVER_IMPORT_EMBED_LAG": "0"}


def a_big_import(count: int) -> list[dict]:
    return [
        {
            "name": f"tool_{i}",
            "description": f"Tool number {i} for the takeover test.",
            "parameters": {"type": "object"},
        }
        for i in range(count)
    ]


def test_a_job_of_a_killed_worker_is_taken_over_at_once_by_the_next_worker(
    transactional_db, purged_broker
):
    catalog = ensure_default_catalog()
    job = start_import(
        catalog, a_big_import(300), "canonical", actor=make_user("carla")
    )
    # Small chunks, each followed by embedding its tools two at a time: the job
    # is still far from done when the worker is killed (one 250-tool chunk could
    # commit the whole import between two looks at its progress).
    slow = {
        **LONG_LEASE,
        "QUIVER_IMPORT_CHUNK": "10",
        "QUIVER_IMPORT_EMBED_LAG": "2",
        "QUIVER_EMBED_BATCH": "2",
    }
    doomed = start_worker("doomed-import", slow)
    try:
        wait_until(
            lambda: Job.objects.get(pk=job.pk).done >= 20,
            timeout=120,
            what="the import to make progress",
        )
    finally:
        stop_worker(doomed, kill=True)
    killed_at = time.monotonic()
    held = Job.objects.get(pk=job.pk)
    assert held.state == "running"
    assert held.done < held.total
    # The rescuer embeds nothing along the way, so the time is the takeover's.
    rescuer = start_worker("rescuer-import", {**LONG_LEASE, **NO_EMBED_IN_STEP})
    try:
        ready_at = time.monotonic()
        wait_until(
            lambda: Job.objects.get(pk=job.pk).worker_pid != held.worker_pid,
            timeout=60,
            what="the job to be taken over",
        )
        claimed_at = time.monotonic()
        wait_until(
            lambda: Job.objects.get(pk=job.pk).state == "succeeded",
            timeout=60,
            what="the job to finish",
        )
        finished_at = time.monotonic()
    finally:
        stop_worker(rescuer)
    done = Job.objects.get(pk=job.pk)
    print(
        f"\ntakeover {claimed_at - ready_at:.1f}s after the rescuer was ready; "
        f"finished {finished_at - killed_at:.1f}s after the kill"
    )
    assert claimed_at - ready_at < 10
    assert finished_at - killed_at < 30
    # Items done after the last progress save are found again as unchanged.
    assert done.counts["created"] + done.counts["unchanged"] == 300
    assert Tool.objects.count() == 300
    assert done.worker_pid != held.worker_pid
