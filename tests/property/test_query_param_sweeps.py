"""Hostile query parameters never get a 5xx: every console page that reads its
query string, and every GET operation of the API with query parameters (read
from the OpenAPI schema, so a new parameter is swept the day it is declared),
with extreme days, numbers past any column's range and random text."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.factories import make_client_key, make_tool, make_user

pytestmark = pytest.mark.django_db

SWEEP = settings(
    max_examples=8,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
EXTREMES = st.sampled_from(
    ["9999-12-31", "0001-01-01", "1999-12-31", "9001-01-01", "2024-02-30",
     "99999999999999999999", "9223372036854775808", "-9223372036854775809", "-1",
     "0", "1e308", "NaN", "inf", "²", "١٢", " ", "%", "'", "\\", "a" * 600,
     "00000000-0000-0000-0000-000000000000", "true", "on", "csv", "jsonl",
     "9999-12-31T23:59:59-12:00", "0001-01-01T00:00:00+14:00", "24h", "*"]
)  # fmt: skip
TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)
VALUES = (
    EXTREMES
    | st.dates().map(str)
    | st.integers().map(str)
    | st.integers(min_value=1, max_value=10).map(str)
    | TEXT
)


# Tried on every parameter alone: the edges of each type a parameter is parsed
# into (a day, a number, an id, a uuid, a choice), and text no type takes.
EDGES = [
    "9999-12-31", "0001-01-01", "99999999999999999999", "-1", "²", "a" * 600,
    "'\"<>%",
]  # fmt: skip


def edge_failures(client: Any, url: str, names: list[str], **headers: str) -> list:
    """Each parameter alone with each edge value: those answered with a 5xx (a
    console page is asked for its htmx fragment: the view runs the same, and the
    whole page is left to the random sweep)."""
    headers.setdefault("HTTP_HX_REQUEST", "true")
    failures = []
    for name in names:
        for value in EDGES:
            joiner = "" if url.endswith("&") else "?"
            response = client.get(f"{url}{joiner}{urlencode({name: value})}", **headers)
            if response.status_code >= 500:
                failures.append((url, name, value[:40], response.status_code))
    return failures


def query(names: list[str]) -> st.SearchStrategy[dict[str, str]]:
    """Some of ``names`` (and now and then one no page takes), hostile values."""
    keys = st.sampled_from([*names, "colour"])
    return st.dictionaries(keys, VALUES, max_size=5)


@pytest.fixture
def world(client: Any) -> dict[str, Any]:
    """An admin signed in, a tool with two versions, and audit rows to page."""
    client.force_login(make_user("root", superuser=True))
    tool = make_tool(name="get_weather")
    key = make_client_key("sweeper", "admin")
    from audit.models import AuditEvent

    return {
        "client": client,
        "tool": tool,
        "event": AuditEvent.objects.order_by("id").last(),
        "key": key,
    }


AUDIT_FILTERS = [
    "q", "since", "until", "event_type", "actor", "catalog", "tool",
    "excluded_tool", "reason", "degraded", "cached", "no_tools", "invalid_calls",
    "request_id", "selection_id",
]  # fmt: skip
TOOL_FILTERS = ["q", "catalog", "category", "tag", "status", "safe", "embedding_status"]
# Console page -> the query parameters it reads.
CONSOLE_PAGES: dict[str, list[str]] = {
    "/audit/": [*AUDIT_FILTERS, "page"],
    "/audit/export": [*AUDIT_FILTERS, "format"],
    "/audit/dashboard/": ["range", "since", "until", "catalog"],
    "/audit/changes/": ["catalog", "tool", "what", "page"],
    "/audit/tools/default/get_weather/v1/": ["at", "hash"],
    "/audit/{event}/why-not/": ["tool"],
    "/tools/": [*TOOL_FILTERS, "page", "sort", "per_page"],
    "/tools/export/": [*TOOL_FILTERS, "sort"],
    "/tools/{tool}/diff/": ["a", "b"],
    "/tools/new/": ["catalog"],
    "/import/": ["catalog"],
    "/jobs/": ["page"],
    "/catalogs/": ["page"],
    "/catalogs/default/changes/": ["tool", "page"],
    "/keys/": ["q", "page"],
    "/try/": ["catalog"],
}


@pytest.mark.parametrize("page", list(CONSOLE_PAGES))
def test_no_console_page_answers_a_5xx_to_any_query(
    world: dict[str, Any], page: str
) -> None:
    url = page.format(tool=world["tool"].pk, event=world["event"].pk)
    names = CONSOLE_PAGES[page]
    assert edge_failures(world["client"], url, names) == []
    if {"since", "until"} <= set(names):  # a range is only read with its first day
        assert edge_failures(world["client"], f"{url}?since=2024-01-01&", names) == []

    @SWEEP
    @given(query(CONSOLE_PAGES[page]))
    def sweep(params: dict[str, str]) -> None:
        response = world["client"].get(f"{url}?{urlencode(params)}")
        assert response.status_code < 500, (url, params)

    sweep()


# Read by the API but not (yet) in its schema: swept all the same.
UNDECLARED = {
    "/api/v1/tools/": ["catalog", "category", "status", "embedding_status", "tag",
                       "role", "safe", "q", "page", "ordering"],
    "/api/v1/tools/export/": ["catalog", "category", "status", "embedding_status",
                             "tag", "role", "safe", "q", "ordering"],
    "/api/v1/jobs/": ["catalog", "page"],
    "/api/v1/catalogs/{slug}/changes/": ["tool", "page"],
}  # fmt: skip


def api_operations(client: Any, key: str) -> list[tuple[str, list[str]]]:
    """GET operations of the API schema with query parameters (and those in
    ``UNDECLARED``)."""
    schema = client.get(
        "/api/schema/",
        HTTP_AUTHORIZATION=f"Bearer {key}",
        HTTP_ACCEPT="application/vnd.oai.openapi+json",
    ).json()
    found = []
    for path, methods in schema["paths"].items():
        params = methods.get("get", {}).get("parameters", [])
        names = [p["name"] for p in params if p["in"] == "query"]
        names += [n for n in UNDECLARED.get(path, []) if n not in names]
        if names:
            found.append((path, names))
    return found


def test_the_api_sweep_covers_the_audit_api(world: dict[str, Any]) -> None:
    paths = [path for path, _ in api_operations(world["client"], world["key"])]
    assert {
        "/api/v1/audit/",
        "/api/v1/audit/export/",
        "/api/v1/audit/verify/",
        "/api/v1/audit/{id}/why-not/",
    } <= set(paths)


def sweep_api(client: Any, url: str, names: list[str], key: str) -> None:
    auth = f"Bearer {key}"
    assert edge_failures(client, url, names, HTTP_AUTHORIZATION=auth) == []

    @SWEEP
    @given(query(names))
    def sweep(params: dict[str, str]) -> None:
        response = client.get(
            f"{url}?{urlencode(params)}", HTTP_AUTHORIZATION=f"Bearer {key}"
        )
        assert response.status_code < 500, (url, params)

    sweep()


def test_no_api_get_answers_a_5xx_to_any_query(world: dict[str, Any]) -> None:
    client, key = world["client"], world["key"]
    rows = {"/audit/": world["event"].pk, "/tools/": world["tool"].pk}
    swept = []
    for path, names in api_operations(client, key):
        url = path.replace("{slug}", "default")
        for prefix, pk in rows.items():
            if prefix in url:
                url = url.replace("{id}", str(pk))
        if "{" in url:
            continue
        sweep_api(client, url, names, key)
        swept.append(path)
    assert "/api/v1/audit/" in swept
