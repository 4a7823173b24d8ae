"""One shared check per endpoint, with healthchecks' three personas:

* the **owner** has the scope the endpoint needs: success, and the audit row written
  (where the endpoint is one that alters or records what agents see);
* the **member** is signed in without that scope: 403, nothing written;
* the **outsider** has the scope but only for another catalog: never a hint that the
  catalog exists (404), nothing written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from audit.models import AuditEvent
from catalog.services import create_catalog
from tests.factories import make_sample_catalog

pytestmark = pytest.mark.django_db

TOOL = {
    "catalog": "default",
    "name": "lookup_order",
    "description": "Look up an order by its number.",
    "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
}


@dataclass(frozen=True)
class Endpoint:
    method: str
    url: str
    body: Any
    owner: str  # the scope that may
    member: str | None  # a signed-in scope that may not (None: every scope may)
    audit: str | None  # the audit event the owner's call writes
    scoped: bool = True  # does it name the default catalog?
    ok: tuple[int, ...] = (200, 201, 202)


ENDPOINTS = [
    Endpoint(
        "post", "/api/v1/select", {"query": "weather"}, "agent", None, "selection"
    ),
    Endpoint(
        "post",
        "/api/v1/validate",
        {"tool": "get_weather", "arguments": {"city": "Oslo"}},
        "agent",
        None,
        "validation",
    ),
    Endpoint(
        "post",
        "/api/v1/tool-calls/validate",
        {
            "output": {
                "type": "function_call",
                "name": "get_weather",
                "arguments": '{"city": "Oslo"}',
                "call_id": "c1",
            }
        },
        "agent",
        None,
        "validation",
    ),  # fmt: skip
    Endpoint("post", "/api/v1/tools/", TOOL, "curator", "agent", None),
    Endpoint(
        "put",
        "/api/v1/catalogs/default/selection-settings",
        {"settings": {"min_combined_score": 0.1}},
        "curator",
        "agent",
        "settings",
    ),
    Endpoint(
        "get",
        "/api/v1/catalogs/default/selection-settings",
        None,
        "curator",
        "agent",
        None,
    ),
    Endpoint(
        "get",
        "/api/v1/catalogs/default/selection-settings/versions",
        None,
        "curator",
        "agent",
        None,
    ),
    Endpoint("get", "/api/v1/catalogs/default/", None, "agent", None, None),
    Endpoint(
        "get", "/api/v1/catalogs/default/export?format=mcp", None, "agent", None, None
    ),
    Endpoint(
        "post",
        "/api/v1/catalogs/",
        {"slug": "beta", "name": "Beta"},
        "curator",
        "agent",
        "catalog_created",
        scoped=False,
    ),
    Endpoint(
        "get", "/api/v1/audit/", None, "compliance", "curator", None, scoped=False
    ),
    Endpoint(
        "get", "/api/v1/audit/verify", None, "compliance", "curator", None, scoped=False
    ),
    Endpoint(
        "get", "/api/v1/audit/export", None, "compliance", "curator", None, scoped=False
    ),
    Endpoint(
        "post",
        "/api/v1/clients/",
        {"name": "new-bot", "scope": "agent", "catalogs": "*"},
        "admin",
        "curator",
        "client_created",
        scoped=False,
    ),
]


@pytest.fixture
def catalog(db):
    return make_sample_catalog("get_weather", "send_email")


def _call(client, endpoint: Endpoint):
    return getattr(client, endpoint.method)(endpoint.url, endpoint.body, format="json")


def _events(kind: str | None) -> int:
    return AuditEvent.objects.filter(event_type=kind).count() if kind else 0


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: f"{e.method} {e.url}")
def test_the_owner_succeeds_and_the_audit_row_is_written(endpoint, with_key, catalog):
    owner = with_key(endpoint.owner, name="owner")
    before = _events(endpoint.audit)
    response = _call(owner, endpoint)
    assert response.status_code in endpoint.ok, response.content
    if endpoint.audit:
        assert _events(endpoint.audit) == before + 1


@pytest.mark.parametrize(
    "endpoint", [e for e in ENDPOINTS if e.member], ids=lambda e: e.url
)
def test_a_member_without_the_scope_gets_403_and_nothing_is_written(
    endpoint, with_key, catalog
):
    member = with_key(endpoint.member, name="member")
    rows = AuditEvent.objects.count()
    response = _call(member, endpoint)
    assert response.status_code == 403, response.content
    assert response.json()["error"] == "permission_denied"
    assert AuditEvent.objects.count() == rows


@pytest.mark.parametrize(
    "endpoint", [e for e in ENDPOINTS if e.scoped], ids=lambda e: e.url
)
def test_an_outsider_limited_to_another_catalog_learns_nothing(
    endpoint, with_key, catalog
):
    create_catalog("elsewhere", "Elsewhere")
    outsider = with_key(endpoint.owner, name="outsider", catalogs=["elsewhere"])
    rows = AuditEvent.objects.count()
    response = _call(outsider, endpoint)
    assert response.status_code == 404, response.content
    assert AuditEvent.objects.count() == rows


def test_nobody_signed_out_gets_anything(api, catalog):
    for endpoint in ENDPOINTS:
        response = _call(api, endpoint)
        assert response.status_code in (401, 403), endpoint.url
