"""Every endpoint that is not a page (the API, its schema, /metrics, /healthz,
/mcp, /.well-known/) answers a method it does not take with a JSON 405 naming
what it takes, never an HTML page: not Django's CSRF page (the test client
checks CSRF here as a browser's request is checked), not a bare 405. The API's
operations are read from the URL configuration, so a new one is swept too."""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from django.db import connection, connections
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from tests.factories import make_client_key

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
PAGES = ("api/docs/",)  # under /api/ but a page for people
GROUP = re.compile(r"\(\?P<(\w+)>((?:[^()\\]|\\.|\([^()]*\))*)\)")
CONVERTER = re.compile(r"<(?:(\w+):)?(\w+)>")
DUMMY = {"int": "1", "uuid": str(uuid.uuid4()), "slug": "default", "path": "x"}


def walk(patterns: list[Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from walk(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern):
            yield prefix + str(pattern.pattern), pattern.callback


def concrete(route: str) -> str:
    """A path the route matches, each parameter given a value of its kind."""

    def group(match: re.Match[str]) -> str:
        return DUMMY["uuid"] if "[0-9a-fA-F]{8}" in match.group(2) else "1"

    path = GROUP.sub(group, route).replace("^", "").replace("$", "")
    path = path.replace("/?", "/").replace("\\.", ".")
    path = CONVERTER.sub(lambda m: DUMMY.get(m.group(1) or "str", "1"), path)
    return "/" + path


def taken(view: Any) -> set[str]:
    """The methods a view answers: a viewset route's actions, an API view's
    handlers."""
    actions = getattr(view, "actions", None)
    if actions:
        return {method.upper() for method in actions}
    cls = getattr(view, "cls", None) or getattr(view, "view_class", None)
    assert cls is not None, view  # every API route is a DRF view
    return {m.upper() for m in cls.http_method_names if hasattr(cls, m)} - {"OPTIONS"}


def api_operations() -> list[tuple[str, str]]:
    """(method, path) for every method each API route does not take."""
    found = []
    for route, view in walk(get_resolver().url_patterns):
        if not route.startswith("api/") or route.startswith(PAGES):
            continue
        if "<format>" in route or "<drf_format_suffix" in route:
            continue  # the same view again, with a format suffix
        path = concrete(route)
        found += [(method, path) for method in METHODS if method not in taken(view)]
    return sorted(set(found))


def problem(response: Any, takes: frozenset[str] = frozenset()) -> str:
    """What is wrong with this answer to a method the endpoint does not take."""
    kind = response.get("Content-Type", "")
    if response.status_code != 405 or not kind.startswith("application/json"):
        return f"{response.status_code} {kind}"
    body = response.json()
    if body.get("error") != "method_not_allowed" or not body.get("detail"):
        return f"body {body}"
    allowed = {m.strip() for m in response.get("Allow", "").split(",")}
    return "" if takes <= allowed and allowed != {""} else f"Allow {allowed}"


@pytest.fixture
def browser_like(db: None) -> Client:
    """A client whose unsafe requests are CSRF-checked, with an admin's key."""
    key = make_client_key("ops-methods", "admin")
    return Client(enforce_csrf_checks=True, HTTP_AUTHORIZATION=f"Bearer {key}")


@pytest.mark.parametrize("path", ["/metrics", "/healthz"])
@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_metrics_and_healthz_refuse_other_methods_with_json(browser_like, path, method):
    response = browser_like.generic(method, path, b"{}", "application/json")
    assert problem(response, frozenset({"GET"})) == ""


def test_every_api_route_refuses_a_method_it_does_not_take_with_json(browser_like):
    operations = api_operations()
    assert len(operations) > 100  # read from the URL configuration
    wrong = []
    for method, path in operations:
        response = browser_like.generic(method, path, b"{}", "application/json")
        found = problem(response)
        if found:
            wrong.append((method, path, found))
    assert wrong == []


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_well_known_path_is_a_json_404(browser_like, method):
    for name in ("openid-configuration", "x", "oauth-protected-resource/other"):
        response = browser_like.generic(method, f"/.well-known/{name}")
        assert response.status_code == 404
        assert response.json()["error"] == "not_found"


def test_the_oauth_metadata_refuses_other_methods_with_json(browser_like):
    for name in ("oauth-protected-resource", "oauth-authorization-server"):
        response = browser_like.generic("POST", f"/.well-known/{name}")
        assert problem(response, frozenset({"GET"})) == ""


def test_mcp_refuses_other_methods_with_json(transactional_db, monkeypatch):
    from gateway.wsgi import with_mcp

    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)
    key = make_client_key("agent-methods", "agent")
    app = with_mcp(lambda environ, start: [])
    answers: dict[str, Any] = {}

    def ask() -> None:
        try:
            transport = httpx.WSGITransport(app=app)
            with httpx.Client(transport=transport, base_url="http://localhost") as c:
                for method in ("GET", "PUT", "PATCH", "DELETE"):
                    headers = {"Authorization": f"Bearer {key}"}
                    answers[method] = c.request(method, "/mcp", headers=headers)
        finally:
            connections.close_all()

    thread = threading.Thread(target=ask)
    thread.start()
    thread.join(60)
    for answer in answers.values():
        assert answer.status_code == 405
        assert answer.headers["Allow"] == "POST"
        assert answer.json()["error"] == "method_not_allowed"
    assert len(answers) == 4
