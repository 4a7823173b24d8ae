"""Background jobs: their lifecycle, and how work reaches the workers.

A Job row in state ``queued`` is the durable queue; the broker only carries the news,
sent by task name after the write commits, so a broker that is down never undoes or
fails the write and the sweeper (``sweep``) sends again whatever still waits. A
worker claims a job with a conditional update and beats a heartbeat while it runs
(``keep_alive``); a job whose worker stopped goes back to ``queued``, and every
progress save is fenced on the claim. docs/how-to/production.md, Scaling out.
"""

from __future__ import annotations

import contextvars
import logging
import os
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import (
    DatabaseError,
    InterfaceError,
    OperationalError,
    connection,
    transaction,
)
from django.db.models import Q, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from config.celery import app
from config.processes import pid_alive
from jobs.choices import JobKind, JobState
from jobs.models import Job

log = logging.getLogger(__name__)

# The name the sweep is sent by (jobs.tasks.sweep_waiting_work): the one it had
# while the catalog ran the sweeper, which messages queued before an upgrade name.
SWEEP = "catalog.tasks.sweep_waiting_work"
# The task that runs each kind of job, registered by the app whose jobs they are
# (its AppConfig.ready calls ``register_job_task``).
JOB_TASKS: dict[str, str] = {}
# More work the sweeper sends again (e.g. the catalog's pending embeddings): the
# name of its count in the sweep's answer, and a function of the cutoff (work
# waiting since before it is sent again) returning how many tasks it sent.
Sweeper = Callable[[datetime], int]
SWEEPERS: dict[str, Sweeper] = {}
DELAYED_WARNING = (
    "background work is delayed: the task queue is unreachable; the work is "
    "saved and will run when the queue is back"
)


class JobLost(Exception):
    """This worker's claim on the job was taken over (its heartbeat stopped)."""


# ---------------------------------------------------------------- enqueueing


@dataclass
class EnqueueWatch:
    """What ``watch_enqueues`` saw: the task names that could not be sent."""

    failed: list[str] = field(default_factory=list)

    @property
    def warning(self) -> str | None:
        return DELAYED_WARNING if self.failed else None


_watch: contextvars.ContextVar[EnqueueWatch | None] = contextvars.ContextVar(
    "enqueue_watch", default=None
)


@contextmanager
def watch_enqueues() -> Iterator[EnqueueWatch]:
    """Collect the sends that failed inside the block (commits happen inside it)."""
    watch = EnqueueWatch()
    token = _watch.set(watch)
    try:
        yield watch
    finally:
        _watch.reset(token)


def register_job_task(kind: str, task: str) -> None:
    """Jobs of ``kind`` run as the task named ``task``."""
    JOB_TASKS[JobKind(kind)] = task


def register_sweeper(name: str, sweeper: Sweeper) -> None:
    """Every sweep also calls ``sweeper(cutoff)``, its count answered as ``name``."""
    SWEEPERS[name] = sweeper


def send(name: str, *args: Any, priority: int | None = None) -> bool:
    """Send a task by name now; False (logged, never raised) if the broker refused.

    Any error is caught: the broker client raises many kinds (kombu, redis,
    socket), and the work is saved in the database for the sweeper either way."""
    try:
        app.send_task(name, args=args, priority=priority)
    except Exception:
        log.warning("could not send %s%r; the sweeper will", name, args, exc_info=True)
        watch = _watch.get()
        if watch is not None:
            watch.failed.append(name)
        return False
    return True


def enqueue(name: str, *args: Any, priority: int | None = None) -> None:
    """Send the task once the current transaction commits (at once outside one)."""
    transaction.on_commit(lambda: send(name, *args, priority=priority))


def enqueue_job(job: Job) -> None:
    enqueue(JOB_TASKS[JobKind(job.kind)], job.pk)


# ---------------------------------------------------------------- lifecycle


def lease() -> timedelta:
    return timedelta(seconds=settings.QUIVER_JOB_LEASE_S)


def heartbeat_interval() -> float:
    return float(settings.QUIVER_JOB_LEASE_S) / 3


def this_worker() -> tuple[str, int]:
    return socket.gethostname(), os.getpid()


def claim_job(job_id: int) -> Job | None:
    """Take a queued job, or a running one whose worker stopped beating; exactly one
    worker wins the conditional update. None: finished or held by a live worker."""
    now = timezone.now()
    host, pid = this_worker()
    updated = (
        Job.objects.filter(pk=job_id)
        .filter(
            Q(state=JobState.QUEUED)
            | Q(state=JobState.RUNNING, heartbeat__lt=now - lease())
            | Q(state=JobState.RUNNING, heartbeat__isnull=True)
        )
        .update(
            state=JobState.RUNNING,
            heartbeat=now,
            started=Coalesce("started", Value(now)),
            worker_host=host,
            worker_pid=pid,
        )
    )
    return Job.objects.get(pk=job_id) if updated == 1 else None


def lease_remaining(job: Job) -> float:
    """Seconds until no live worker can still be holding this unfinished job."""
    if job.state == JobState.QUEUED or job.heartbeat is None:
        return 0.0
    left = job.heartbeat + lease() - timezone.now()
    return max(0.0, left.total_seconds())


def _claimed(job: Job) -> Any:
    """The job's row, as long as this claim still holds it."""
    return Job.objects.filter(
        pk=job.pk,
        state=JobState.RUNNING,
        worker_host=job.worker_host,
        worker_pid=job.worker_pid,
    )


def save_progress(job: Job, *fields: str) -> None:
    """Save these fields and beat; JobLost if another worker took the job over."""
    job.heartbeat = timezone.now()
    values = {name: getattr(job, name) for name in (*fields, "heartbeat")}
    if not _claimed(job).update(**values):
        raise JobLost(f"job {job.pk} was taken over by another worker")


def finish_job(job: Job, *fields: str) -> Job:
    """Mark the job succeeded, saving these fields with it (fenced like progress)."""
    job.state = JobState.SUCCEEDED
    job.finished = timezone.now()
    values = {name: getattr(job, name) for name in (*fields, "state", "finished")}
    if not _claimed(job).update(**values):
        raise JobLost(f"job {job.pk} was taken over by another worker")
    return job


def fail_job(job: Job, message: str) -> None:
    job.state = JobState.FAILED
    job.finished = timezone.now()
    job.errors = [*job.errors, message]
    job.save(update_fields=["state", "finished", "errors"])


def run_claimed(job_id: int, what: str, work: Callable[[Job], object]) -> None:
    """A job task's body: claim job ``job_id`` and run ``work`` on it. Taken over
    by another worker: a warning. The database went away: the job is not at
    fault; its heartbeat has stopped, so a sweeper puts it back in the queue once
    the lease is out. Anything else fails the job and is raised."""
    job = claim_job(job_id)
    if job is None:
        return
    try:
        work(job)
    except JobLost:
        log.warning("%s job %s was taken over by another worker", what, job_id)
    except (OperationalError, InterfaceError) as exc:
        log.warning("%s job %s paused, database unavailable: %s", what, job_id, exc)
    except Exception as exc:
        log.exception("%s job %s failed", what, job_id)
        fail_job(job, f"{type(exc).__name__}: {exc}")
        raise


@contextmanager
def keep_alive(job: Job) -> Iterator[None]:
    """Beat the job's heartbeat from a thread while the block runs, so a dead
    worker is noticed within a lease whatever one item costs."""
    stop = threading.Event()
    beater = threading.Thread(
        target=_beat, args=(job, stop), name=f"job-{job.pk}-heartbeat", daemon=True
    )
    beater.start()
    try:
        yield
    finally:
        stop.set()
        beater.join()


def _beat(job: Job, stop: threading.Event) -> None:
    try:
        while not stop.wait(heartbeat_interval()):
            try:
                if not _claimed(job).update(heartbeat=timezone.now()):
                    return
            except DatabaseError:
                log.warning("job %s: heartbeat not saved", job.pk, exc_info=True)
                connection.close()
    finally:
        connection.close()


# ---------------------------------------------------------------- the sweeper


def release_dead_jobs() -> int:
    """Put back in the queue running jobs whose worker is known dead: on this
    host with its pid gone, or silent for a whole lease. Returns how many."""
    host, _pid = this_worker()
    running = Job.objects.filter(state=JobState.RUNNING)
    stale = Q(heartbeat__lt=timezone.now() - lease()) | Q(heartbeat__isnull=True)
    dead_pids = [
        pid
        for pid in running.filter(worker_host=host).values_list("worker_pid", flat=True)
        if pid is not None and not pid_alive(pid)
    ]
    here_dead = Q(worker_host=host, worker_pid__in=dead_pids)
    return running.filter(stale | here_dead).update(state=JobState.QUEUED)


def sweep(*, min_age_s: float) -> dict[str, int]:
    """Send again every job still queued after ``min_age_s`` (or released from a
    dead worker), and what each registered sweeper finds waiting as long;
    idempotent, since a job is claimed by a conditional update (and a sweeper's
    work is claimed its own way, e.g. a tool by a row lock)."""
    released = release_dead_jobs()
    cutoff = timezone.now() - timedelta(seconds=min_age_s)
    waiting = Job.objects.filter(state=JobState.QUEUED).filter(
        Q(created__lt=cutoff) | Q(started__isnull=False)
    )
    sent = sum(
        send(JOB_TASKS[JobKind(kind)], pk)
        for pk, kind in waiting.values_list("pk", "kind")
    )
    swept = {name: sweeper(cutoff) for name, sweeper in SWEEPERS.items()}
    return {"released": released, "jobs": sent, **swept}
