"""Embedding tasks on real worker processes: fresh, batched, and crash-proof."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.db import connections, transaction

from catalog.choices import EmbeddingStatus
from catalog.models import Tool, ToolEmbedding
from catalog.services import ensure_default_catalog
from catalog.services.embeddings import (
    current_backend,
    embed_pending_batch,
    embed_tools,
    start_reindex,
)
from config.celery import app
from jobs.models import Job
from tests.conftest import start_worker, stop_worker, wait_until
from tests.factories import make_tool

pytestmark = [pytest.mark.integration]


def all_ready(count: int) -> bool:
    ready = Tool.objects.filter(embedding_status=EmbeddingStatus.READY).count()
    return ready == count


def test_a_new_tool_is_embedded_by_the_worker_after_commit(celery_worker):
    tool = make_tool(name="get_weather", description="Current weather for a city.")
    wait_until(lambda: all_ready(1), timeout=90, what="the tool to be embedded")
    row = ToolEmbedding.objects.get(tool=tool)
    assert row.dimension == 384
    assert len(row.embedding) == 384


def test_an_unchanged_tool_is_not_embedded_again(transactional_db, purged_broker):
    tool = make_tool(name="get_weather")
    assert embed_tools([tool.pk])["embedded"] == 1
    first = ToolEmbedding.objects.get(tool=tool).created
    assert embed_tools([tool.pk]) == {"embedded": 0, "unchanged": 1, "skipped": 0}
    assert ToolEmbedding.objects.get(tool=tool).created == first


def test_a_killed_worker_loses_nothing_and_every_tool_ends_ready(
    transactional_db, purged_broker
):
    catalog = ensure_default_catalog()
    count = 160
    # Long texts in batches of two: the job takes seconds, so it is still running
    # when the worker is killed (short ones in fours finished between two looks).
    filler = " ".join(f"word{n}" for n in range(60))
    for i in range(count):
        make_tool(catalog, name=f"tool_{i}", description=f"Tool {i}: {filler}.")
    app.control.purge()  # only the re-index job below is left to do
    job = start_reindex(catalog, force=True)
    slow = {"QUIVER_EMBED_BATCH": "2"}
    first = start_worker("doomed", slow)
    try:
        wait_until(
            lambda: Job.objects.get(pk=job.pk).done >= 6,
            timeout=120,
            what="the job to make progress",
        )
    finally:
        stop_worker(first, kill=True)
    assert Job.objects.get(pk=job.pk).state == "running"
    assert Tool.objects.filter(embedding_status="pending").exists()
    second = start_worker("rescuer", slow)
    try:
        wait_until(lambda: all_ready(count), timeout=180, what="every tool ready")
        wait_until(
            lambda: Job.objects.get(pk=job.pk).state == "succeeded",
            timeout=60,
            what="the job to finish",
        )
    finally:
        stop_worker(second)
    assert ToolEmbedding.objects.count() == count
    model = current_backend().model_id
    catalog.refresh_from_db()
    assert catalog.active_embedding_model == model


@contextmanager
def locked_by_another_worker(tool_ids: list[int]) -> Iterator[None]:
    """Hold row locks on these tools from another connection while inside."""
    locked, release = threading.Event(), threading.Event()

    def hold() -> None:
        with transaction.atomic():
            list(Tool.objects.select_for_update().filter(pk__in=tool_ids))
            locked.set()
            release.wait(timeout=30)
        connections.close_all()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert locked.wait(timeout=10)
        yield
    finally:
        release.set()
        holder.join()


def test_a_tool_locked_by_another_worker_is_skipped_not_embedded_twice(
    transactional_db, purged_broker
):
    tool = make_tool(name="get_weather")
    with locked_by_another_worker([tool.pk]):
        assert embed_tools([tool.pk]) == {"embedded": 0, "unchanged": 0, "skipped": 1}
        assert not ToolEmbedding.objects.filter(tool=tool).exists()
    assert embed_tools([tool.pk])["embedded"] == 1


def test_a_pending_batch_takes_the_tools_no_other_worker_holds(
    transactional_db, purged_broker
):
    tools = [make_tool(name=f"tool_{i}") for i in range(6)]
    with locked_by_another_worker([tool.pk for tool in tools[1:3]]):
        counts = embed_pending_batch(tools[0].pk, size=3)
    assert counts == {"embedded": 3, "unchanged": 0, "skipped": 0}
    embedded = set(ToolEmbedding.objects.values_list("tool_id", flat=True))
    assert embedded == {tools[0].pk, tools[3].pk, tools[4].pk}


def test_the_catalog_switches_to_the_model_once_its_last_tool_is_embedded(
    transactional_db, purged_broker
):
    catalog = ensure_default_catalog()
    first = make_tool(catalog, name="get_weather")
    second = make_tool(catalog, name="send_email")
    embed_tools([first.pk])
    catalog.refresh_from_db()
    assert catalog.active_embedding_model == ""
    embed_tools([second.pk])
    catalog.refresh_from_db()
    assert catalog.active_embedding_model == current_backend().model_id


def test_an_import_embeds_itself_when_it_gets_too_far_ahead(
    transactional_db, purged_broker, settings
):
    from catalog.services.embeddings import keep_embeddings_in_step
    from catalog.services.imports import run_import, start_import
    from jobs.services import claim_job
    from tests.factories import make_user

    settings.QUIVER_IMPORT_EMBED_LAG = 3
    catalog = ensure_default_catalog()
    document = [
        {
            "name": f"tool_{i}",
            "description": f"Tool number {i}.",
            "parameters": {"type": "object"},
        }
        for i in range(25)
    ]
    job = start_import(catalog, document, "canonical", actor=make_user("carla"))
    app.control.purge()  # no worker here: only the import itself embeds
    lags = []

    def in_step(job: Job) -> None:
        keep_embeddings_in_step(job.catalog_id)
        lags.append(Tool.objects.filter(embedding_status="pending").count())

    run_import(claim_job(job.pk), in_step)
    assert Tool.objects.count() == 25
    assert lags and max(lags) <= 3
    # Checked after items 1, 11 and 21: at most 3 of the first 21 were left.
    assert ToolEmbedding.objects.count() >= 18


def test_keeping_in_step_does_nothing_when_turned_off(
    transactional_db, purged_broker, settings
):
    from catalog.services.embeddings import keep_embeddings_in_step

    settings.QUIVER_IMPORT_EMBED_LAG = 0
    for i in range(4):
        make_tool(name=f"tool_{i}")
    assert keep_embeddings_in_step(ensure_default_catalog().pk) == 0
    assert not ToolEmbedding.objects.exists()


def test_an_import_stops_embedding_along_the_way_after_an_embedding_error(
    transactional_db, purged_broker, settings, django_assert_num_queries
):
    from catalog.tasks import EmbeddingsInStep

    settings.QUIVER_IMPORT_EMBED_LAG = 1
    # Nothing listens on the discard port: a real connection error.
    settings.QUIVER_EMBEDDINGS = {
        "BACKEND": "openai",
        "BASE_URL": "http://127.0.0.1:9/v1",
        "MODEL": "unreachable",
        "TIMEOUT": 2,
        "DIMENSION": 8,
    }
    current_backend.cache_clear()
    try:
        for i in range(3):
            make_tool(name=f"tool_{i}")
        in_step = EmbeddingsInStep()
        job = Job(catalog=ensure_default_catalog())
        in_step(job)
        assert in_step.failed
        assert Tool.objects.filter(embedding_status="pending").count() == 3
        with django_assert_num_queries(0):
            in_step(job)  # does not try again
    finally:
        current_backend.cache_clear()
