"""/mcp and the REST API read a body by one rule (config.bodies): a chunked body on
a server that cannot mark its end is a 411 on both, never a body taken as empty
(before, /mcp handed the MCP server an empty body)."""

from __future__ import annotations

import io
import json

import pytest
from django.test import RequestFactory

from config.bodies import Refusal, read_body
from config.wsgi import application
from tests.factories import make_client_key

BODY = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()


def environ(body: bytes, *, terminated: bool, chunked: bool = True) -> dict:
    env = (
        RequestFactory().post("/mcp", data=b"", content_type="application/json").environ
    )
    env["wsgi.input"] = io.BytesIO(body)
    env.pop("CONTENT_LENGTH", None)
    if chunked:
        env["HTTP_TRANSFER_ENCODING"] = "chunked"
    else:
        env["CONTENT_LENGTH"] = str(len(body))
    if terminated:
        env["wsgi.input_terminated"] = True
    return env


def test_a_chunked_body_without_a_marked_end_is_refused_with_411():
    refused = read_body(environ(BODY, terminated=False), 4096)
    assert refused == Refusal(
        411,
        "length_required",
        "body: send a Content-Length (this server cannot read chunks)",
    )


def test_a_chunked_body_with_a_marked_end_is_read_whole():
    assert read_body(environ(BODY, terminated=True), 4096) == BODY


@pytest.mark.parametrize("chunked", [True, False])
def test_a_body_past_the_limit_is_a_413_whichever_way_it_came(chunked):
    refused = read_body(environ(BODY, terminated=True, chunked=chunked), 10)
    assert isinstance(refused, Refusal) and refused.status == 413


def test_a_body_with_a_length_is_read_to_that_length():
    env = environ(BODY + b"trailing", terminated=False, chunked=False)
    env["CONTENT_LENGTH"] = str(len(BODY))
    assert read_body(env, 4096) == BODY


def call(env: dict) -> tuple[str, bytes]:
    seen: dict[str, str] = {}

    def start(status: str, headers: list, exc_info: object = None) -> None:
        seen["status"] = status

    body = b"".join(application(env, start))
    return seen["status"], body


@pytest.mark.django_db(transaction=True)  # /mcp closes stale connections
@pytest.mark.parametrize("path", ["/mcp", "/api/v1/select"])
def test_mcp_and_the_api_both_answer_411_to_an_unreadable_chunked_body(path):
    key = make_client_key("agent-411", "agent")
    env = environ(BODY, terminated=False)
    env["PATH_INFO"] = path
    env["HTTP_AUTHORIZATION"] = f"Bearer {key}"
    env["HTTP_ACCEPT"] = "application/json, text/event-stream"
    env["HTTP_HOST"] = "localhost"
    env["SERVER_NAME"] = "localhost"
    status, body = call(env)
    assert status.startswith("411"), (status, body[:200])
    assert json.loads(body)["error"] == "length_required"
