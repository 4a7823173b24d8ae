"""Per-client rate limits on /select, /select/batch, /validate and imports."""

from __future__ import annotations

import logging

import pytest
import redis
from django.conf import settings as django_settings

from config import ratelimit
from identity.models import ApiClient
from tests.factories import make_tool

pytestmark = pytest.mark.django_db
NOW = 1_800_000_010.0  # ten seconds into a minute


@pytest.fixture(autouse=True)
def fresh_counter(monkeypatch):
    """Each test starts with its own counter (Redis keys are per client anyway)
    and a clock standing still, so no test straddles two windows."""
    monkeypatch.setattr(ratelimit, "COUNTER", ratelimit.Counter())
    monkeypatch.setattr(ratelimit, "clock", lambda: NOW)


@pytest.fixture
def tool(db):
    return make_tool(name="get_weather")


def limited_key(with_key, limit, name="agent-1"):
    api = with_key("agent", name=name)
    ApiClient.objects.filter(name=name).update(rate_limit_per_minute=limit)
    return api


def select(api, query="weather in Paris"):
    return api.post("/api/v1/select", {"query": query}, format="json")


def batch(api, size):
    body = {"requests": [{"query": f"weather {n}"} for n in range(size)]}
    return api.post("/api/v1/select/batch", body, format="json")


def test_a_client_over_its_limit_gets_429_naming_the_limit(with_key, tool):
    api = limited_key(with_key, 3)
    assert [select(api).status_code for _ in range(3)] == [200, 200, 200]
    response = select(api)
    assert response.status_code == 429
    assert response["Retry-After"] == "50"
    body = response.json()
    assert body["error"] == "throttled"
    assert body["retryable"] is True  # nothing was done: send it after the wait
    assert "limit of 3 audited requests" in body["detail"]


def test_the_site_default_applies_to_a_client_without_its_own(with_key, tool, settings):
    settings.QUIVER_RATE_LIMIT_PER_MINUTE = 2
    api = with_key("agent")
    assert [select(api).status_code for _ in range(3)] == [200, 200, 429]


def test_the_default_is_1200_selections_a_minute():
    assert django_settings.QUIVER_RATE_LIMIT_PER_MINUTE == 1200


def test_zero_means_no_limit(with_key, tool):
    api = limited_key(with_key, 0)
    assert {select(api).status_code for _ in range(5)} == {200}


def test_a_batch_counts_each_item_and_a_refused_one_spends_nothing(with_key, tool):
    api = limited_key(with_key, 5)
    assert batch(api, 3).status_code == 200
    assert batch(api, 3).status_code == 429
    assert [select(api).status_code for _ in range(3)] == [200, 200, 429]


def test_each_client_has_its_own_budget(with_key, tool):
    first = limited_key(with_key, 1, name="first")
    assert [select(first).status_code for _ in range(2)] == [200, 429]
    second = limited_key(with_key, 1, name="second")
    assert select(second).status_code == 200


def test_validation_counts_against_the_same_budget(with_key, tool):
    api = limited_key(with_key, 1)
    assert select(api).status_code == 200
    body = {"tool": "get_weather", "arguments": {"city": "Paris"}}
    response = api.post("/api/v1/validate", body, format="json")
    assert response.status_code == 429


def test_imports_are_limited_too(with_key):
    api = with_key("curator", name="importer")
    ApiClient.objects.filter(name="importer").update(rate_limit_per_minute=1)
    url = "/api/v1/catalogs/default/import"
    assert api.post(url, {"hello": "world"}, format="json").status_code == 400
    assert api.post(url, {"hello": "world"}, format="json").status_code == 429


def test_the_budget_comes_back_the_next_minute(with_key, tool, monkeypatch):
    api = limited_key(with_key, 1)
    assert [select(api).status_code for _ in range(2)] == [200, 429]
    monkeypatch.setattr(ratelimit, "clock", lambda: NOW + 60)
    assert select(api).status_code == 200


def test_the_counts_live_in_redis_shared_by_every_process(with_key, tool):
    api = limited_key(with_key, 10)
    batch(api, 4)
    client = ApiClient.objects.get(name="agent-1")
    window = int(NOW // 60)
    broker = redis.Redis.from_url(django_settings.CELERY_BROKER_URL)
    assert broker.get(f"quiver:rate:client:{client.pk}:{window}") == b"4"
    assert 0 < broker.ttl(f"quiver:rate:client:{client.pk}:{window}") <= 120


def test_with_redis_down_selection_answers_and_counts_per_process(
    with_key, tool, settings, caplog
):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"
    api = limited_key(with_key, 2)
    with caplog.at_level(logging.WARNING, logger="config.ratelimit"):
        assert [select(api).status_code for _ in range(3)] == [200, 200, 429]
    assert "rate limits counted per process" in caplog.text
