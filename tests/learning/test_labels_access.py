"""Who may read and manage a catalog's labels, evaluations and confusable tools
(identity.access.may_read_labels / may_manage_labels): curators and admins manage;
compliance reads; agents get a 403; a caller limited to another catalog a 404
(never a hint that the catalog exists); nobody signed in is refused. A refused
call writes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from audit.choices import EventType
from audit.models import AuditEvent
from catalog.services import create_catalog
from identity.models import UserCatalogAccess
from learning.models import Evaluation, Label
from tests.factories import make_tool, make_user

pytestmark = pytest.mark.django_db

BASE = "/api/v1/catalogs/default"
READS: list[tuple[str, str, Any]] = [
    ("get", f"{BASE}/labels", None),
    ("get", f"{BASE}/labels/{{label}}", None),
    ("get", f"{BASE}/evaluations", None),
    ("get", f"{BASE}/confusable", None),
]
WRITES: list[tuple[str, str, Any]] = [
    (
        "post",
        f"{BASE}/labels",
        {"labels": [{"query": "weather?", "tools": ["get_weather"]}]},
    ),
    ("delete", f"{BASE}/labels?all=true", None),
    ("delete", f"{BASE}/labels/{{label}}", None),
    ("post", f"{BASE}/labels/review", {"ids": [1], "status": "accepted"}),
    ("post", f"{BASE}/labels/proposals", {}),
    ("post", f"{BASE}/evaluations", {}),
]


@pytest.fixture
def world(db):
    make_tool(name="get_weather")
    create_catalog("other", "Other", actor=None)
    label = Label.objects.create(catalog_id=1, query="existing", tools=["get_weather"])
    outsider = make_user("otto", groups=("curator",))
    UserCatalogAccess.objects.create(user=outsider, catalogs=["other"])
    return {
        "label": label,
        "admin": make_user("root", superuser=True),
        "curator": make_user("carla", groups=("curator",)),
        "compliance": make_user("cora", groups=("compliance",)),
        "agent": make_user("mo"),
        "outsider": outsider,
    }


def call(client, method, url, body, world):
    url = url.replace("{label}", str(world["label"].pk))
    return getattr(client, method)(url, body, format="json")


def writes_nothing(world, before_events):
    assert Label.objects.count() == 1
    assert not Evaluation.objects.exists()
    assert (
        AuditEvent.objects.filter(event_type=EventType.LABELS_CHANGED).count()
        == before_events
    )


@pytest.mark.parametrize(("method", "url", "body"), READS)
@pytest.mark.parametrize("who", ["admin", "curator", "compliance"])
def test_curators_compliance_and_admins_read(as_user, world, who, method, url, body):
    response = call(as_user(world[who]), method, url, body, world)
    assert response.status_code == 200, response.json()


@pytest.mark.parametrize(("method", "url", "body"), READS + WRITES)
def test_an_agent_is_refused_with_a_403_and_nothing_is_written(
    as_user, world, method, url, body
):
    response = call(as_user(world["agent"]), method, url, body, world)
    assert response.status_code == 403
    assert "permission" in response.json()["detail"]
    writes_nothing(world, 0)


@pytest.mark.parametrize(("method", "url", "body"), READS + WRITES)
def test_a_caller_limited_to_another_catalog_gets_a_404(
    as_user, world, method, url, body
):
    response = call(as_user(world["outsider"]), method, url, body, world)
    assert response.status_code == 404
    assert "default" in response.json()["detail"]
    writes_nothing(world, 0)


@pytest.mark.parametrize(("method", "url", "body"), WRITES)
def test_compliance_reads_but_may_not_manage(as_user, world, method, url, body):
    response = call(as_user(world["compliance"]), method, url, body, world)
    assert response.status_code == 403
    writes_nothing(world, 0)


@pytest.mark.parametrize(("method", "url", "body"), READS + WRITES)
def test_nobody_signed_in_is_refused(api, world, method, url, body):
    response = call(api, method, url, body, world)
    assert response.status_code in (401, 403)
    writes_nothing(world, 0)


@pytest.mark.parametrize(("method", "url", "body"), WRITES)
@pytest.mark.parametrize("who", ["admin", "curator"])
def test_curators_and_admins_manage(as_user, world, who, method, url, body):
    response = call(as_user(world[who]), method, url, body, world)
    assert response.status_code in (200, 201, 202, 204), response.content


@pytest.mark.parametrize(
    ("scope", "catalogs", "status"),
    [("agent", "*", 403), ("compliance", "*", 403), ("curator", ["other"], 404)],
)
def test_keys_follow_the_same_rules(with_key, world, scope, catalogs, status):
    client = with_key(scope, catalogs=catalogs)
    response = client.post(
        f"{BASE}/labels", {"labels": [{"query": "q", "tools": []}]}, format="json"
    )
    assert response.status_code == status
    writes_nothing(world, 0)


def test_a_curator_key_of_the_catalog_uploads(with_key, world):
    client = with_key("curator", catalogs=["default"])
    response = client.post(
        f"{BASE}/labels", {"labels": [{"query": "q", "tools": []}]}, format="json"
    )
    assert response.status_code == 201
    assert response.json()["added"] == 1


def test_the_console_pages_follow_the_same_rules(client, world):
    pages = ["/catalogs/default/labels/", "/catalogs/default/evaluation/",
             "/catalogs/default/labels/review/"]  # fmt: skip
    for who, status in (("curator", 200), ("compliance", 200), ("agent", 403),
                        ("outsider", 404)):  # fmt: skip
        client.force_login(world[who])
        for page in pages:
            assert client.get(page).status_code == status, (who, page)
    client.force_login(world["compliance"])
    refused = client.post("/catalogs/default/labels/delete/", {"scope": "all"})
    assert refused.status_code == 403
    writes_nothing(world, 0)
