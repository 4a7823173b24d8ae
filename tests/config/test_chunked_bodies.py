"""A chunked request body (Transfer-Encoding: chunked, no Content-Length) is read,
through gunicorn as ``make run`` serves it: Django alone reads no body without a
Content-Length, so the select below was answered as if its body were empty."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import worker_env
from tests.factories import make_client_key, make_tool
from tests.outages import running_web

LIMIT = 4096


@pytest.fixture(scope="module")
def gunicorn(django_db_setup: None, django_db_blocker: Any) -> Iterator[httpx.Client]:
    """One gunicorn for the module (its start is most of the time), on the test
    database."""
    env = worker_env()
    env["QUIVER_MAX_BODY_BYTES"] = str(LIMIT)
    with (
        running_web(env, "chunked") as url,
        httpx.Client(base_url=url, timeout=60) as client,
    ):
        yield client


@pytest.fixture
def web(transactional_db: None, gunicorn: httpx.Client) -> httpx.Client:
    return gunicorn


def chunks(body: bytes, size: int = 7) -> Iterator[bytes]:
    """``body`` as an iterator, which httpx sends chunked (no Content-Length)."""
    for start in range(0, len(body), size):
        yield body[start : start + size]


def post_chunked(http: httpx.Client, url: str, body: Any, key: str) -> httpx.Response:
    data = json.dumps(body).encode()
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    request = http.build_request("POST", url, content=chunks(data), headers=headers)
    assert request.headers["Transfer-Encoding"] == "chunked"
    assert "Content-Length" not in request.headers
    return http.send(request)


def test_a_chunked_select_body_is_read_and_answered(web: httpx.Client) -> None:
    make_tool(name="get_weather", description="Current weather for a city.")
    key = make_client_key("chunky", "agent")
    body = {"query": "weather in Paris", "scorer": "keyword", "max_candidates": 1}
    response = post_chunked(web, "/api/v1/select", body, key)
    assert response.status_code == 200, response.text
    assert [tool["name"] for tool in response.json()["tools"]] == ["get_weather"]


def test_a_chunked_body_gets_the_same_field_errors_as_any_other(
    web: httpx.Client,
) -> None:
    key = make_client_key("chunky", "agent")
    response = post_chunked(web, "/api/v1/select", {"query": "x", "colour": 1}, key)
    assert response.status_code == 400
    assert list(response.json()["fields"]) == ["colour"]


def test_a_chunked_body_past_the_limit_is_a_413(web: httpx.Client) -> None:
    key = make_client_key("chunky", "agent")
    response = post_chunked(web, "/api/v1/select", {"query": "x" * LIMIT}, key)
    assert response.status_code == 413
    assert response.json()["error"] == "payload_too_large"
