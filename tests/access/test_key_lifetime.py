"""Keys live no longer than whoever made them: a key made by a key stops when any key
above it stops; a key made by a person stops when that person is deactivated or
deleted. Checking the chain costs one query, however long it is."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from identity.models import ApiClient
from identity.services.clients import create_api_client, revoke_api_client
from tests.factories import make_client_key, make_user

pytestmark = pytest.mark.django_db
PROBE = "/api/v1/catalogs/"


def as_key(key: str) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return api


def make_child(parent: APIClient, name: str) -> str:
    response = parent.post(
        "/api/v1/clients/",
        {"name": name, "scope": "admin", "catalogs": "*"},
        format="json",
    )
    assert response.status_code == 201, response.content
    return str(response.json()["key"])


@pytest.fixture
def chain(db: None) -> dict[str, APIClient]:
    """root made by the system, child made by root, grandchild made by child."""
    root = as_key(make_client_key("root", "admin"))
    child = as_key(make_child(root, "child"))
    grandchild = as_key(make_child(child, "grandchild"))
    return {"root": root, "child": child, "grandchild": grandchild}


def stop(name: str, how: str) -> None:
    client = ApiClient.objects.get(name=name)
    if how == "revoked":
        revoke_api_client(client, actor=None)
    elif how == "expired":
        client.expires = timezone.now() - timedelta(seconds=1)
        client.save(update_fields=["expires"])
    else:
        client.user.is_active = False
        client.user.save(update_fields=["is_active"])


def test_a_key_made_by_a_key_records_its_parent(chain):
    grandchild = ApiClient.objects.get(name="grandchild")
    assert grandchild.parent is not None
    assert grandchild.parent.name == "child"
    assert grandchild.parent.parent is not None
    assert grandchild.parent.parent.name == "root"


@pytest.mark.parametrize("how", ["revoked", "expired", "deactivated"])
@pytest.mark.parametrize(
    ("stopped", "below"),
    [("root", "child"), ("root", "grandchild"), ("child", "grandchild")],
)
def test_a_key_stops_when_a_key_above_it_stops(chain, how, stopped, below):
    assert chain[below].get(PROBE).status_code == 200
    stop(stopped, how)
    response = chain[below].get(PROBE)
    assert response.status_code == 401
    detail = response.json()["detail"]
    assert f"the key {stopped!r} above it is" in detail
    assert how in detail


def test_a_key_above_a_stopped_key_keeps_working(chain):
    stop("grandchild", "revoked")
    assert chain["child"].get(PROBE).status_code == 200
    assert chain["root"].get(PROBE).status_code == 200


def test_a_key_stops_when_the_key_that_made_it_is_deleted(chain):
    ApiClient.objects.get(name="child").user.delete()
    response = chain["grandchild"].get(PROBE)
    assert response.status_code == 401
    assert "made by a deleted key" in response.json()["detail"]


def test_checking_the_chain_costs_one_query_however_long_it_is(chain):
    counts: dict[str, int] = {}
    for name, api in chain.items():
        api.get(PROBE)  # last use is recorded at most once a minute: not counted
        with CaptureQueriesContext(connection) as queries:
            assert api.get(PROBE).status_code == 200
        counts[name] = len(queries)
    assert counts["child"] == counts["root"] + 1
    assert counts["grandchild"] == counts["child"]


# Keys made by people ---------------------------------------------------------------


@pytest.fixture
def olga_key(db: None) -> tuple[Any, APIClient]:
    olga = make_user("olga", groups=("admin",))
    _client, key = create_api_client("olga-bot", "agent", catalogs="*", actor=olga)
    api = as_key(key)
    assert api.get(PROBE).status_code == 200
    return olga, api


def test_a_person_made_key_stops_when_the_person_is_deactivated(olga_key):
    olga, api = olga_key
    olga.is_active = False
    olga.save(update_fields=["is_active"])
    response = api.get(PROBE)
    assert response.status_code == 401
    assert "deactivated" in response.json()["detail"]


def test_a_person_made_key_stops_when_the_person_is_deleted(olga_key):
    olga, api = olga_key
    olga.delete()
    stored = ApiClient.objects.get(name="olga-bot")
    assert stored.owner is None
    assert stored.owner_name == "olga"
    response = api.get(PROBE)
    assert response.status_code == 401
    assert "deleted user" in response.json()["detail"]


def test_keys_made_by_a_persons_key_stop_when_the_person_is_deleted(db):
    olga = make_user("olga", groups=("admin",))
    _client, key = create_api_client("olga-admin", "admin", catalogs="*", actor=olga)
    child = as_key(make_child(as_key(key), "olga-child"))
    assert child.get(PROBE).status_code == 200
    olga.delete()
    response = child.get(PROBE)
    assert response.status_code == 401
    assert "'olga-admin' above it is of a deleted user" in response.json()["detail"]


def test_a_key_made_by_the_system_has_no_owner_and_keeps_working(db):
    key = make_client_key("system-bot", "agent")
    stored = ApiClient.objects.get(name="system-bot")
    assert (stored.owner_name, stored.parent_name) == ("", "")
    assert as_key(key).get(PROBE).status_code == 200
