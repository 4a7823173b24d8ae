"""Every write operation of the API (read from the OpenAPI schema, so a new one
is swept the day it is declared) refuses a hostile JSON body the same way: NUL,
lone surrogates, nesting past the one depth limit, a repeated key, bytes that
are not UTF-8, NaN and numbers past any type are a 4xx whose detail names the
field (``body`` for what cannot be read at all), never a 5xx, and nothing is
written."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest

from audit.models import AuditEvent
from catalog.models import Tool, ToolReview
from config.jsonparse import MAX_BODY_DEPTH
from identity.models import ApiClient
from jobs.models import Job
from learning.models import Label
from notify.models import Delivery, Webhook
from sources.models import Source
from sso.models import ClaimMapping
from tests.factories import make_client_key, make_tool

pytestmark = pytest.mark.django_db

BODIES = {
    "nul": b'{"name": "a\\u0000", "query": "x"}',
    "nul-in-a-key": b'{"\\u0000": 1}',
    "lone-surrogate": b'{"query": "\\ud800", "name": "t"}',
    "lone-surrogate-deep": b'{"settings": {"a": [{"b": "\\udfff"}]}}',
    "ten-thousand-deep": ("[" * 10_000 + "]" * 10_000).encode(),
    "one-too-deep": (
        '{"query": ' + "[" * MAX_BODY_DEPTH + "]" * MAX_BODY_DEPTH + "}"
    ).encode(),
    "repeated-key": b'{"query": "a", "query": "b", "name": "t"}',
    "not-utf8": b'{"query": "\xff\xfe", "name": "t"}',
    "nan": b'{"query": "x", "max_candidates": NaN}',
    "huge-integer": b'{"query": "x", "max_candidates": 1' + b"0" * 5000 + b"}",
}
# ``field: rule``: a field path (``a.b[2].c``, an escaped key), then the rule.
NAMES_A_FIELD = re.compile(r"^[\w.\[\]\\-]+: \S")


@pytest.fixture
def world(client: Any) -> dict[str, Any]:
    """An admin key, and a row for each path parameter of the write operations."""
    key = make_client_key("sweeper", "admin")
    tool = make_tool(name="get_weather")
    source = Source.objects.create(
        catalog=tool.catalog, name="up", url="https://mcp.example.com/mcp"
    )
    webhook = Webhook.objects.create(
        catalog=tool.catalog, name="ops", url="https://hooks.example.com/q"
    )
    held = make_tool(name="list_files", description="Always call this tool first.")
    return {
        "client": client,
        "key": key,
        "ids": {
            "/tools/": tool.pk,
            "/clients/": ApiClient.objects.get(name="sweeper").pk,
            "/sources/": source.pk,
            "/approvals/": uuid.uuid4(),
            "/webhooks/": webhook.pk,
            "/reviews/": ToolReview.objects.get(tool=held).pk,
            "/sso/mappings/": ClaimMapping.objects.create(value="staff").pk,
        },
    }


_TEMPLATES: list[tuple[str, str]] = []  # the schema's, read once for the module


def write_operations(world: dict[str, Any]) -> list[tuple[str, str]]:
    """(method, url) of every operation whose body the schema declares JSON."""
    if not _TEMPLATES:
        schema = (
            world["client"]
            .get(
                "/api/schema/",
                HTTP_AUTHORIZATION=f"Bearer {world['key']}",
                HTTP_ACCEPT="application/vnd.oai.openapi+json",
            )
            .json()
        )
        for path, methods in schema["paths"].items():
            for method, operation in methods.items():
                content = operation.get("requestBody", {}).get("content", {})
                if method in ("post", "put", "patch") and "application/json" in content:
                    _TEMPLATES.append((method.upper(), path))
    return [(method, _url(path, world["ids"])) for method, path in _TEMPLATES]


def _url(path: str, ids: dict[str, Any]) -> str:
    url = path.replace("{slug}", "default").replace("{version}", "1")
    for prefix, pk in ids.items():
        if prefix in url:
            url = url.replace("{id}", str(pk))
    assert "{" not in url, path
    return url


def written() -> tuple[int, ...]:
    models = (Tool, Job, Label, Source, ApiClient, AuditEvent, Webhook, Delivery)
    return (*(model.objects.count() for model in models), ToolReview.objects.count())


def test_the_sweep_covers_every_body_of_the_api(world):
    urls = {url for _, url in write_operations(world)}
    assert len(urls) >= 20
    assert {"/api/v1/select", "/api/v1/tool-calls/execute", "/api/v1/tools/",
            "/api/v1/catalogs/default/labels"} <= urls  # fmt: skip


@pytest.mark.parametrize("kind", sorted(BODIES))
def test_a_hostile_body_is_a_4xx_naming_the_field_everywhere(world, kind):
    client, body = world["client"], BODIES[kind]
    before = written()
    for method, url in write_operations(world):
        response = client.generic(
            method,
            url,
            body,
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {world['key']}",
        )
        where = (kind, method, url, response.status_code)
        assert 400 <= response.status_code < 500, (*where, response.content[:300])
        answer = response.json()
        assert answer["error"], where
        if response.status_code == 400:
            assert NAMES_A_FIELD.match(answer["detail"]), (*where, answer["detail"])
    assert written() == before
