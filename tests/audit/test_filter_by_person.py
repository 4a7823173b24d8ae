"""Compliance filters the audit log by person: their own events and every event
an agent wrote acting for them, across keys and OAuth clients (the console, the
API and the export share one parser)."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from identity.models import ApiClient
from identity.services.clients import create_api_client
from oauth.acting import TOKEN_ID
from tests.factories import make_tool, make_user
from tests.oauth_flow import connect

pytestmark = pytest.mark.django_db


@pytest.fixture
def events(api):
    make_tool(name="get_weather", description="Current weather for a city.")
    alice = make_user("alice", groups=("support",))
    bob = make_user("bob", groups=("support",))
    bound, key = create_api_client("alice-bot", "agent", catalogs="*", person=alice)
    free, free_key = create_api_client("free-bot", "agent", catalogs="*")
    connection = connect(alice, roles=("support",))

    def select_as(credentials=None, user=None):
        if user is not None:
            api.force_authenticate(user=user)
        else:
            api.force_authenticate(user=None)
            api.credentials(HTTP_AUTHORIZATION=f"Bearer {credentials}")
        answer = api.post("/api/v1/select", {"query": "weather"}, format="json")
        assert answer.status_code == 200, answer.content

    select_as(key)
    select_as(free_key)
    principal = ApiClient.objects.get(pk=connection.principal_id).user
    setattr(principal, TOKEN_ID, "a" * 32)
    select_as(user=principal)
    api.credentials()
    select_as(user=alice)
    select_as(user=bob)
    return alice


def test_the_person_filter_finds_their_own_rows_and_their_agents(events, as_user):
    api = as_user(make_user("cora", groups=("compliance",)))
    answer = api.get("/api/v1/audit/", {"person": "alice", "event_type": "selection"})
    assert answer.status_code == 200, answer.content
    rows = answer.json()["results"]
    assert len(rows) == 3  # the bound key's, the connection's, her own
    actors = sorted(row["actor_name"] for row in rows)
    assert "alice" in actors
    assert "api:alice-bot" in actors
    assert not any(name == "api:free-bot" for name in actors)
    bob = api.get("/api/v1/audit/", {"person": "bob", "event_type": "selection"})
    assert [row["actor_name"] for row in bob.json()["results"]] == ["bob"]


def test_the_console_names_the_person_and_client_behind_an_agent(events, client):
    client.force_login(make_user("cora", groups=("compliance",)))
    page = client.get("/audit/", {"person": "alice"})
    text = page.content.decode()
    assert page.status_code == 200
    assert "for alice via Probe" in text
    row = AuditEvent.objects.filter(input__acting_for__oauth_client__name="Probe").get()
    detail = client.get(f"/audit/{row.pk}/").content.decode()
    assert "through the OAuth client Probe" in detail
    assert "a" * 32 in detail
