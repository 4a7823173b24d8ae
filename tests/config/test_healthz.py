"""GET /healthz"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def test_it_answers_503_naming_the_worker_when_none_runs(client, purged_broker):
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["down"] == ["worker"]
    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["pgvector"]["version"]
    assert body["checks"]["broker"]["ok"] is True


@pytest.mark.integration
def test_it_answers_200_when_every_part_is_up(client, celery_worker):
    response = client.get("/healthz")
    assert response.status_code == 200, response.json()
    assert response.json()["checks"]["worker"]["workers"]


def test_it_names_the_broker_when_redis_is_unreachable(client, settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"
    response = client.get("/healthz")
    assert response.status_code == 503
    assert "broker" in response.json()["down"]
