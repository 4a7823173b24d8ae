"""How the rate limit counts (config.ratelimit): a batch one per item, a batch
larger than what is left refused whole, reads nothing. That every write of the
API and the console is throttled is each endpoint's contract, walked from the
URL configuration by tests/access/test_every_endpoint.py."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from audit.models import AuditEvent
from config import ratelimit
from identity.access import ALL_CATALOGS
from identity.models import ApiClient
from identity.services.clients import create_api_client
from tests.factories import make_client_key, make_sample_catalog, make_tool, make_user

pytestmark = pytest.mark.django_db

TOOL = {
    "catalog": "default",
    "name": "lookup_order",
    "description": "Look up an order by its number.",
    "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
}


@pytest.fixture(autouse=True)
def counted_here(monkeypatch):
    """A fresh counter per test that never asks Redis (so no count survives a
    run), and a clock standing still inside one window."""
    counter = ratelimit.Counter()
    counter._redis_down_until = float("inf")
    monkeypatch.setattr(ratelimit, "COUNTER", counter)
    monkeypatch.setattr(ratelimit, "clock", lambda: 1_800_000_010.0)


@pytest.fixture
def targets(db) -> dict[str, int]:
    make_sample_catalog("get_weather", "send_email")
    spare = make_tool(name="spare", description="A spare tool.")
    # Within the caller's own limit of 1, so the caller may manage it.
    target, _key = create_api_client(
        "target-bot",
        "agent",
        catalogs=ALL_CATALOGS,
        rate_limit_per_minute=1,
        actor=None,
    )
    somebody = make_user("somebody", groups=("compliance",))
    return {"tool": spare.pk, "client": target.pk, "person": somebody.pk}


def key(scope: str, limit: int) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {make_client_key('caller', scope)}")
    ApiClient.objects.filter(name="caller").update(rate_limit_per_minute=limit)
    return api


@pytest.mark.parametrize("size", [1, 5, 50])
def test_a_batch_of_n_uses_n_of_the_limit(size, targets):
    api = key("agent", limit=size)
    body = {"requests": [{"query": f"weather {n}"} for n in range(size)]}
    response = api.post("/api/v1/select/batch", body, format="json")
    assert response.status_code == 200
    assert all("error" not in r for r in response.json()["results"])
    after = api.post("/api/v1/select", {"query": "weather"}, format="json")
    assert after.status_code == 429


def test_a_batch_larger_than_what_is_left_is_refused_whole(targets):
    api = key("agent", limit=5)
    assert api.post("/api/v1/select", {"query": "weather"}, format="json").status_code
    rows = AuditEvent.objects.count()
    body = {"requests": [{"query": f"weather {n}"} for n in range(5)]}
    response = api.post("/api/v1/select/batch", body, format="json")
    assert response.status_code == 429
    assert AuditEvent.objects.count() == rows
    # the refused batch spent nothing: four single selections still fit
    for _ in range(4):
        assert (
            api.post("/api/v1/select", {"query": "w"}, format="json").status_code == 200
        )


def test_reads_cost_nothing(targets):
    api = key("curator", limit=1)
    for _ in range(3):
        assert api.get("/api/v1/tools/").status_code == 200
        assert api.get("/api/v1/catalogs/default/selection-settings").status_code == 200
    assert api.post("/api/v1/tools/", TOOL, format="json").status_code == 201
