"""Imports never starve behind learning work: evaluations and learns go to the
``learning`` queue, taken by a worker of its own, so an import completes on the
``quiver`` worker while learning runs hold theirs; the stalled-run sweep sends a
lost run back to that queue. Real workers; nothing here is timed: a run is held
by a row lock, not by a clock."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from django.conf import settings
from django.utils import timezone

from catalog.models import Tool
from catalog.services import work
from catalog.services.catalogs import ensure_default_catalog
from config.celery import app
from jobs import services as jobs
from jobs.choices import JobState
from jobs.models import Job
from learning.models import Evaluation, EvaluationState
from learning.services import evaluations, stalled
from learning.services.evaluations import RUN_TASK
from learning.services.learn import RUN_LEARN
from tests.conftest import start_worker, stop_worker, wait_until, worker_env
from tests.factories import make_tool, make_user, weather_schema

pytestmark = [pytest.mark.integration]
INLINE = [
    {"query": "weather in Paris", "tools": ["get_weather"]},
    {"query": "send a mail to Dana", "tools": ["send_email"]},
]
FINISHED = (EvaluationState.SUCCEEDED, EvaluationState.FAILED)


def queue_of(task: str) -> str:
    return str(app.amqp.router.route({}, task)["queue"].name)


@pytest.fixture(scope="module")
def module_workers(django_db_setup: None, purged_broker: None) -> Iterator[None]:
    """A worker for each queue, as `make run` and docker compose start them
    (for the module: each start costs seconds; they keep no state of a test)."""
    started: list[subprocess.Popen[bytes]] = []
    try:
        started.append(start_worker("imports", queues="quiver"))
        started.append(start_worker("learning", queues="learning"))
        yield
    finally:
        for process in started:
            stop_worker(process)


@pytest.fixture
def split_workers(module_workers: None, transactional_db: None) -> None:
    """The module's workers, for a test whose data they must see (committed)."""


def catalog_with_tools() -> Any:
    catalog = ensure_default_catalog()
    make_tool(catalog, "get_weather", description="Current weather for a city.")
    make_tool(catalog, "send_email", description="Send an email to a person.")
    return catalog


def hold(run: Evaluation) -> psycopg.Connection[Any]:
    """Lock the run's row from another connection: the learning worker's claim
    (a conditional UPDATE) waits on it, holding the worker's only process."""
    url = worker_env()["DATABASE_URL"]
    holder = psycopg.connect(url)
    holder.execute(
        "SELECT id FROM learning_evaluation WHERE id = %s FOR UPDATE", [run.pk]
    )
    return holder


def waiting_on_a_lock() -> bool:
    with psycopg.connect(worker_env()["DATABASE_URL"], autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
            "AND datname = current_database()"
        ).fetchone()
    return bool(row and row[0])


def import_job(with_key: Any) -> int:
    tool = {"name": "get_forecast", "description": "Forecast.",
            "parameters": weather_schema()}  # fmt: skip
    answer = with_key("curator").post(
        "/api/v1/catalogs/default/import", [tool], format="json"
    )
    assert answer.status_code == 202, answer.json()
    return int(answer.json()["id"])


def test_evaluations_and_learns_are_routed_to_their_own_queue_and_imports_not():
    assert queue_of(RUN_TASK) == queue_of(RUN_LEARN) == "learning"
    for task in (*jobs.JOB_TASKS.values(), work.EMBED_TOOL, jobs.SWEEP):
        assert queue_of(task) == settings.CELERY_TASK_DEFAULT_QUEUE == "quiver"


def test_an_import_completes_while_learning_runs_hold_their_worker(
    split_workers, with_key
):
    catalog = catalog_with_tools()
    person = make_user("carla", groups=("curator",))
    runs = [
        evaluations.start_evaluation(
            catalog, actor=person, labels=INLINE, enqueue=False
        )
        for _ in range(2)
    ]
    holder = hold(runs[0])
    try:
        for run in runs:
            jobs.send(RUN_TASK, run.pk)
        wait_until(waiting_on_a_lock, timeout=60, what="the learning worker to wait")

        job_id = import_job(with_key)
        job = wait_until(
            lambda: Job.objects.filter(pk=job_id, state=JobState.SUCCEEDED).first(),
            timeout=120,
            what="the import, with learning runs waiting",
        )
        assert Tool.objects.filter(name="get_forecast").exists()
        states = set(Evaluation.objects.values_list("state", flat=True))
        assert states == {EvaluationState.QUEUED}, "the runs were held throughout"
        assert job.finished is not None
    finally:
        holder.rollback()
        holder.close()
    wait_until(
        lambda: Evaluation.objects.filter(state=EvaluationState.SUCCEEDED).count() == 2,
        timeout=180,
        what="both evaluations once released",
    )


def test_the_stalled_sweep_sends_a_lost_run_to_the_learning_worker(
    split_workers, settings
):
    settings.QUIVER_LEARNING_RESEND_S = 5
    catalog = catalog_with_tools()
    person = make_user("carla", groups=("curator",))
    run = evaluations.start_evaluation(
        catalog, actor=person, labels=INLINE, enqueue=False
    )  # its message lost: never sent
    Evaluation.objects.filter(pk=run.pk).update(
        created=timezone.now() - timedelta(minutes=5)
    )

    assert stalled.sweep()["resent"] == 1
    wait_until(
        lambda: Evaluation.objects.filter(pk=run.pk, state__in=FINISHED).first(),
        timeout=120,
        what="the resent evaluation",
    )
    assert Evaluation.objects.get(pk=run.pk).state == EvaluationState.SUCCEEDED
