"""Every endpoint that writes an audit row counts against the caller's rate limit
(config.ratelimit): the API's and the console's, one per row asked for, a batch
one per item; past the limit a 429 and nothing written."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.test import APIClient

from audit.models import AuditEvent
from config import ratelimit
from identity.access import ALL_CATALOGS
from identity.models import ApiClient
from identity.services.clients import create_api_client
from tests.catalog.test_console_views import tool_form
from tests.factories import make_client_key, make_sample_catalog, make_tool, make_user

pytestmark = pytest.mark.django_db

TOOL = {
    "catalog": "default",
    "name": "lookup_order",
    "description": "Look up an order by its number.",
    "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
}
CALL = {
    "type": "function_call",
    "name": "get_weather",
    "arguments": '{"city": "Oslo"}',
    "call_id": "c1",
}


@dataclass(frozen=True)
class Endpoint:
    method: str
    url: str  # {tool} and {client} are filled in
    body: Any
    scope: str
    audited: bool = True  # does the first call write its row in the request?


API = [
    Endpoint("post", "/api/v1/select", {"query": "weather"}, "agent"),
    Endpoint(
        "post", "/api/v1/select/batch", {"requests": [{"query": "weather"}]}, "agent"
    ),
    Endpoint(
        "post",
        "/api/v1/validate",
        {"tool": "get_weather", "arguments": {"city": "Oslo"}},
        "agent",
    ),
    Endpoint("post", "/api/v1/tool-calls/validate", {"output": CALL}, "agent"),
    Endpoint(
        "post",
        "/api/v1/tools/bulk",
        {"filter": {}, "set": {"status": "deprecated"}},
        "curator",
    ),
    Endpoint(
        "put",
        "/api/v1/catalogs/default/selection-settings",
        {"settings": {"min_combined_score": 0.1}},
        "curator",
    ),
    Endpoint("post", "/api/v1/catalogs/", {"slug": "beta", "name": "Beta"}, "curator"),
    Endpoint("post", "/api/v1/tools/", TOOL, "curator"),
    Endpoint("put", "/api/v1/tools/{tool}/", {**TOOL, "name": "spare"}, "curator"),
    Endpoint("patch", "/api/v1/tools/{tool}/", {"description": "New."}, "curator"),
    Endpoint("delete", "/api/v1/tools/{tool}/", None, "curator"),
    # An import's rows are written by the worker, one job; the request costs 1.
    Endpoint(
        "post", "/api/v1/catalogs/default/import", [TOOL], "curator", audited=False
    ),
    Endpoint(
        "post",
        "/api/v1/clients/",
        {"name": "bot", "scope": "agent", "catalogs": "*", "rate_limit_per_minute": 1},
        "admin",
    ),
    Endpoint("post", "/api/v1/clients/{client}/rotate", None, "admin"),
    Endpoint("post", "/api/v1/clients/{client}/revoke", None, "admin"),
]

CONSOLE = [
    Endpoint("post", "/try/", {"catalog": "default", "query": "weather"}, "member"),
    Endpoint(
        "post",
        "/catalogs/default/selection-settings/",
        {"settings": json.dumps({"min_combined_score": 0.1})},
        "curator",
    ),
    Endpoint("post", "/catalogs/", {"slug": "ops", "name": "Operations"}, "curator"),
    Endpoint("post", "/tools/new/", tool_form(name="lookup_order"), "curator"),
    # The first post of an edit or a bulk edit is its preview: nothing is written.
    Endpoint(
        "post", "/tools/{tool}/edit/", tool_form(name="spare"), "curator", audited=False
    ),
    Endpoint(
        "post",
        "/tools/bulk/",
        {"scope": "filtered", "action": "status:disabled"},
        "curator",
        audited=False,
    ),
    Endpoint("post", "/tools/{tool}/status/", {"status": "deprecated"}, "curator"),
    Endpoint("post", "/tools/{tool}/delete/", {}, "curator"),
    Endpoint(
        "post",
        "/import/",
        {"catalog": "default", "document": json.dumps([TOOL])},
        "curator",
        audited=False,
    ),  # fmt: skip
    Endpoint(
        "post",
        "/keys/",
        {"name": "bot", "scope": "agent", "all_catalogs": "on"},
        "admin",
    ),
    Endpoint(
        "post",
        "/people/",
        {"username": "reader", "groups": ["compliance"], "all_catalogs": "on"},
        "admin",
    ),
    Endpoint(
        "post",
        "/people/{person}/",
        {"groups": ["curator"], "all_catalogs": "on"},
        "admin",
    ),
    Endpoint("post", "/people/{person}/active/", {"active": "0"}, "admin"),
    Endpoint(
        "post",
        "/keys/{client}/edit/",
        {"roles": "edited", "all_catalogs": "on", "rate_limit_per_minute": "1"},
        "admin",
    ),
    Endpoint("post", "/keys/{client}/rotate/", {}, "admin"),
    Endpoint("post", "/keys/{client}/revoke/", {}, "admin"),
]


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


def person(client: Any, scope: str) -> Any:
    groups = () if scope in ("member", "admin") else (scope,)
    user = make_user(f"{scope}-person", groups=groups, superuser=scope == "admin")
    client.force_login(user)
    return client


def call(api: Any, endpoint: Endpoint, ids: dict[str, int], **extra: Any) -> Any:
    url = endpoint.url.format(**ids)
    return getattr(api, endpoint.method)(url, endpoint.body, **extra)


def ids_of(endpoint: Endpoint) -> str:
    return f"{endpoint.method} {endpoint.url}"


@pytest.mark.parametrize("endpoint", API, ids=ids_of)
def test_every_audited_api_endpoint_answers_429_once_the_keys_limit_is_used(
    endpoint, targets
):
    api = key(endpoint.scope, limit=1)
    rows = AuditEvent.objects.count()
    first = call(api, endpoint, targets, format="json")
    assert first.status_code < 400, first.content
    if endpoint.audited:
        assert AuditEvent.objects.count() > rows
    rows = AuditEvent.objects.count()
    second = call(api, endpoint, targets, format="json")
    assert second.status_code == 429, second.content
    assert second.json()["error"] == "throttled"
    assert "limit of 1 " in second.json()["detail"]
    assert second["Retry-After"]
    assert AuditEvent.objects.count() == rows


@pytest.mark.parametrize("endpoint", CONSOLE, ids=ids_of)
def test_every_audited_console_form_answers_429_once_the_persons_limit_is_used(
    endpoint, targets, client, settings
):
    settings.QUIVER_RATE_LIMIT_PER_MINUTE = 1
    page = person(client, endpoint.scope)
    rows = AuditEvent.objects.count()
    first = call(page, endpoint, targets)
    assert first.status_code < 400, first.content
    if endpoint.audited:
        assert AuditEvent.objects.count() > rows
    rows = AuditEvent.objects.count()
    second = call(page, endpoint, targets)
    assert second.status_code == 429
    assert "limit of 1 " in second.content.decode()
    assert second["Retry-After"]
    assert AuditEvent.objects.count() == rows


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


def _patterns(resolver: URLResolver, prefix: str = "") -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            found += _patterns(entry, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            found.append((prefix + str(entry.pattern), entry.callback))
    return found


def _writes(callback: Any) -> bool:
    """Does this DRF view accept a method that is not a read?"""
    actions = getattr(callback, "actions", None)
    if actions is not None:
        return any(m not in ("get", "head", "options") for m in actions)
    view = callback.cls
    return any(hasattr(view, m) for m in ("post", "put", "patch", "delete"))


def test_every_api_view_that_writes_is_throttled():
    """So a new write endpoint cannot forget its rate limit: every DRF view that
    accepts a write has a throttle charging the caller's budget."""
    unthrottled = []
    for route, callback in _patterns(get_resolver()):
        if not hasattr(callback, "cls") or not route.startswith("api/"):
            continue
        if not _writes(callback):
            continue
        throttles = callback.initkwargs.get("throttle_classes") or getattr(
            callback.cls, "throttle_classes", ()
        )
        if not any(issubclass(t, ratelimit.ClientRateThrottle) for t in throttles):
            unthrottled.append(route)
    assert unthrottled == []
