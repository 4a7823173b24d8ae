"""Redis down: a write is saved and its work queued for later, never a 500; when
Redis is back the work runs on the worker that was already running."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from catalog.models import Tool
from catalog.services import ensure_default_catalog
from jobs.models import Job
from jobs.services import DELAYED_WARNING
from tests.catalog.test_import_page import preview
from tests.conftest import start_worker, stop_worker, wait_until
from tests.factories import weather_schema
from tests.outages import RedisServer, celery_broker

pytestmark = [pytest.mark.integration]


@pytest.fixture
def own_redis(transactional_db: None) -> Iterator[RedisServer]:
    """A Redis of this test's own, which Celery in this process talks to."""
    redis = RedisServer("outage")
    redis.start()
    try:
        with celery_broker(redis.url):
            yield redis
    finally:
        redis.stop()


def tool_body(name: str) -> dict:
    return {
        "catalog": "default",
        "name": name,
        "description": "Current weather for a city.",
        "parameters": weather_schema(),
    }


def an_import() -> list[dict]:
    return [
        {"name": f"imported_{i}", "description": "Imported.", "parameters": {}}
        for i in range(3)
    ]


def test_a_tool_write_with_redis_down_is_saved_and_answers_201_with_a_warning(
    own_redis, with_key
):
    client = with_key("curator")
    own_redis.stop()
    started = time.monotonic()
    response = client.post("/api/v1/tools/", tool_body("get_weather"), format="json")
    assert time.monotonic() - started < 10
    assert response.status_code == 201, response.content
    assert response.json()["warning"] == DELAYED_WARNING
    assert Tool.objects.get(name="get_weather").embedding_status == "pending"
    again = client.post("/api/v1/tools/", tool_body("get_weather"), format="json")
    assert again.status_code == 409
    changed = {**tool_body("get_weather"), "description": "Weather now."}
    changed.pop("catalog")
    tool_id = response.json()["id"]
    update = client.put(f"/api/v1/tools/{tool_id}/", changed, format="json")
    assert update.status_code == 200, update.content
    assert update.json()["warning"] == DELAYED_WARNING


def test_an_import_with_redis_down_is_saved_queued_and_answers_202_with_a_warning(
    own_redis, with_key
):
    own_redis.stop()
    response = with_key("curator").post(
        "/api/v1/catalogs/default/import", an_import(), format="json"
    )
    assert response.status_code == 202, response.content
    assert response.json()["warning"] == DELAYED_WARNING
    assert Job.objects.get(pk=response.json()["id"]).state == "queued"


def test_a_write_with_redis_up_carries_no_warning(own_redis, with_key):
    response = with_key("curator").post(
        "/api/v1/tools/", tool_body("get_weather"), format="json"
    )
    assert response.status_code == 201
    assert "warning" not in response.json()


def test_the_console_import_form_says_the_work_is_delayed(own_redis, as_curator):
    ensure_default_catalog()
    own_redis.stop()
    document = [{"name": "imported_0", "description": "x", "parameters": {}}]
    _, posted = preview(as_curator, document)
    response = as_curator.post("/import/", posted, follow=True)
    assert response.status_code == 200
    assert "background work is delayed" in response.content.decode()
    assert Job.objects.get().state == "queued"


def test_work_saved_while_redis_was_down_runs_when_it_returns_without_a_restart(
    own_redis, with_key, purged_broker
):
    worker = start_worker("survivor", {"CELERY_BROKER_URL": own_redis.url})
    try:
        own_redis.stop()
        client = with_key("curator")
        imported = client.post(
            "/api/v1/catalogs/default/import", an_import(), format="json"
        )
        created = client.post("/api/v1/tools/", tool_body("get_weather"), format="json")
        assert imported.status_code == 202
        assert created.status_code == 201
        time.sleep(1)
        own_redis.start()  # empty: whatever it held before is gone too
        job_id = imported.json()["id"]
        wait_until(
            lambda: Job.objects.get(pk=job_id).state == "succeeded",
            timeout=60,
            what="the import saved during the outage to run",
        )
        wait_until(
            lambda: not Tool.objects.exclude(embedding_status="ready").exists(),
            timeout=90,
            what="every tool to be embedded",
        )
        assert worker.poll() is None  # the same worker process did it
    finally:
        stop_worker(worker)
