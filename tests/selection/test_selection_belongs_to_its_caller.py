"""A selection_id belongs to the key (or person) that made it: another caller
linking it in tool-calls/validate gets exactly the 404 of an unknown id, except
compliance and admins, who may link any selection of their catalogs."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from audit.choices import EventType
from audit.models import AuditEvent
from catalog.services import create_catalog
from tests.factories import make_client_key, make_tool

pytestmark = pytest.mark.django_db

URL = "/api/v1/tool-calls/validate"
CALL = {
    "type": "function_call",
    "name": "get_weather",
    "arguments": '{"city": "Paris", "unit": "celsius"}',
    "call_id": "c1",
}


@pytest.fixture
def tool(db):
    return make_tool(name="get_weather", description="Get the weather for a city.")


def key(name: str, scope: str = "agent", **options: Any) -> APIClient:
    api = APIClient()
    secret = make_client_key(name, scope, **options)
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return api


def select(api: APIClient) -> str:
    body = {"query": "weather in Paris", "scorer": "keyword", "max_candidates": 1}
    response = api.post("/api/v1/select", body, format="json")
    assert response.status_code == 200, response.content
    return str(response.json()["selection_id"])


def link(api: APIClient, selection_id: str) -> Any:
    body = {"output": CALL, "selection_id": selection_id}
    return api.post(URL, body, format="json")


def same_shape(one: Any, other: Any, ids: tuple[str, str]) -> None:
    """Equal once each body's own id is replaced by a placeholder."""
    first = one.content.decode().replace(ids[0], "ID")
    second = other.content.decode().replace(ids[1], "ID")
    assert first == second


def test_the_key_that_made_a_selection_may_link_it(tool):
    owner = key("owner")
    selection_id = select(owner)
    response = link(owner, selection_id)
    assert response.status_code == 200, response.content
    assert response.json()["selection_id"] == selection_id
    assert response.json()["calls"][0]["flags"] == []


def test_another_keys_selection_is_the_same_404_as_an_unknown_id(tool):
    owner, other = key("owner"), key("other")
    selection_id = select(owner)
    unknown = str(uuid.uuid4())
    theirs = link(other, selection_id)
    nothing = link(other, unknown)
    assert theirs.status_code == nothing.status_code == 404
    assert theirs.json()["error"] == "not_found"
    assert "selection_id" in theirs.json()["detail"]
    same_shape(theirs, nothing, (selection_id, unknown))
    assert dict(theirs.items()).keys() == dict(nothing.items()).keys()


def test_a_refused_link_writes_no_validation_row(tool):
    owner, other = key("owner"), key("other")
    selection_id = select(owner)
    link(other, selection_id)
    assert not AuditEvent.objects.filter(event_type=EventType.VALIDATION).exists()


def test_an_unknown_id_and_another_keys_run_the_same_queries(tool):
    """No timing-obvious difference: both answers run the same queries, the
    owner being a condition of the one lookup, not a check after it."""
    owner, other = key("owner"), key("other")
    selection_id = select(owner)
    link(other, str(uuid.uuid4()))  # warm any per-process caches first
    with CaptureQueriesContext(connection) as theirs:
        link(other, selection_id)
    with CaptureQueriesContext(connection) as unknown:
        link(other, str(uuid.uuid4()))
    shapes = [
        [q["sql"].replace(selection_id.replace("-", ""), "ID") for q in theirs],
        [q["sql"] for q in unknown],
    ]
    assert len(shapes[0]) == len(shapes[1])
    lookups = [[sql for sql in shape if "selection_id" in sql] for shape in shapes]
    assert len(lookups[0]) == 1
    assert "actor_id" in lookups[0][0]


def test_a_key_with_the_same_roles_and_catalogs_is_still_another_caller(tool):
    owner = key("owner", roles=["support"])
    twin = key("twin", roles=["support"])
    assert link(twin, select(owner)).status_code == 404


def test_a_person_may_not_link_a_keys_selection(tool, member):
    owner = key("owner")
    person = APIClient()
    person.force_login(member)
    assert link(person, select(owner)).status_code == 404


def test_a_persons_selection_belongs_to_that_person(tool, member):
    person = APIClient()
    person.force_login(member)
    selection_id = select(person)
    assert link(person, selection_id).status_code == 200
    assert link(key("other"), selection_id).status_code == 404


@pytest.mark.parametrize("scope", ["compliance", "admin"])
def test_compliance_and_admin_keys_may_link_any_selection(tool, scope):
    selection_id = select(key("owner"))
    response = link(key("reviewer", scope), selection_id)
    assert response.status_code == 200, response.content
    assert response.json()["selection_id"] == selection_id


def test_a_compliance_person_may_link_any_selection(tool, compliance):
    selection_id = select(key("owner"))
    person = APIClient()
    person.force_login(compliance)
    assert link(person, selection_id).status_code == 200


def test_an_admin_limited_to_another_catalog_still_gets_404(tool):
    create_catalog("elsewhere", "Elsewhere")
    selection_id = select(key("owner"))
    limited = key("limited-admin", "admin", catalogs=["elsewhere"])
    assert link(limited, selection_id).status_code == 404


def test_a_curator_is_not_a_reviewer(tool):
    selection_id = select(key("owner"))
    assert link(key("curator", "curator"), selection_id).status_code == 404
