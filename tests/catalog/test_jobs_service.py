"""The job lifecycle: who holds a job, when it is free again, and fencing."""

from __future__ import annotations

import os
import subprocess
from datetime import timedelta

import pytest
from django.utils import timezone

from catalog.services import ensure_default_catalog
from jobs.choices import JobKind, JobState
from jobs.models import Job
from jobs.services import (
    JobLost,
    claim_job,
    release_dead_jobs,
    save_progress,
    this_worker,
)

pytestmark = pytest.mark.django_db


def a_pid_that_is_gone() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def running_job(host: str, pid: int, beat_age_s: float = 0) -> Job:
    return Job.objects.create(
        kind=JobKind.IMPORT,
        catalog=ensure_default_catalog(),
        state=JobState.RUNNING,
        heartbeat=timezone.now() - timedelta(seconds=beat_age_s),
        worker_host=host,
        worker_pid=pid,
    )


def test_a_job_whose_worker_pid_is_gone_from_this_host_is_released_at_once():
    host, _ = this_worker()
    job = running_job(host, a_pid_that_is_gone())
    assert release_dead_jobs() == 1
    assert Job.objects.get(pk=job.pk).state == JobState.QUEUED


def test_a_job_of_a_live_worker_that_beats_is_left_alone():
    host, pid = this_worker()
    job = running_job(host, pid)
    other = running_job("another-host", 1)
    assert release_dead_jobs() == 0
    assert Job.objects.get(pk=job.pk).state == JobState.RUNNING
    assert Job.objects.get(pk=other.pk).state == JobState.RUNNING


def test_a_job_whose_heartbeat_stopped_for_a_lease_is_released(settings):
    settings.QUIVER_JOB_LEASE_S = 6
    job = running_job("another-host", 1, beat_age_s=7)
    assert release_dead_jobs() == 1
    assert Job.objects.get(pk=job.pk).state == JobState.QUEUED


def test_a_claim_records_this_worker():
    job = Job.objects.create(kind=JobKind.IMPORT, catalog=ensure_default_catalog())
    claimed = claim_job(job.pk)
    assert claimed is not None
    assert (claimed.worker_host, claimed.worker_pid) == this_worker()
    assert claim_job(job.pk) is None  # held by a live worker


def test_a_worker_that_lost_its_job_is_told_at_its_next_progress_save():
    job = running_job("another-host", os.getpid())
    Job.objects.filter(pk=job.pk).update(worker_host="the-new-worker")
    job.done = 5
    with pytest.raises(JobLost):
        save_progress(job, "done")
    assert Job.objects.get(pk=job.pk).done == 0
