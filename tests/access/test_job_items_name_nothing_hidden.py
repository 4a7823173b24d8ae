"""A job's items (API jobs/{id} and the console's job page) name only tools the
reader could be offered; the rest are counted, never named. Curators,
compliance and admins keep the catalog, so they see every item and error."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from catalog.services.catalogs import ensure_default_catalog
from jobs.choices import JobKind, JobState
from jobs.models import Job
from tests.factories import make_client_key, make_tool, make_user

pytestmark = pytest.mark.django_db

HIDDEN = ("wipe_disk", "refund_payment", "root_shell")
ERROR = "ValueError: tools[3] wipe_disk could not be parsed"


def item(index: int, name: str | None, outcome: str = "created", reason: str = ""):
    return {"index": index, "name": name, "outcome": outcome, "reason": reason}


@pytest.fixture
def job(db) -> Job:
    """An import that touched a tool every agent sees, an unsafe one, one for the
    billing role only, a deleted one, and refused a nameless item."""
    make_tool(name="get_weather")
    make_tool(name="wipe_disk", safe=False)
    make_tool(name="refund_payment", allowed_roles=["billing"])
    return Job.objects.create(
        kind=JobKind.IMPORT,
        catalog=ensure_default_catalog(),
        state=JobState.FAILED,
        total=6,
        done=6,
        counts={"created": 3, "updated": 1, "rejected": 2},
        items=[
            item(0, "get_weather"),
            item(1, "wipe_disk"),
            item(2, "refund_payment", "updated"),
            item(3, "root_shell"),  # since deleted: nobody can be offered it
            item(4, None, "rejected", "tools[4]: wipe_disk is not a name here"),
            item(
                5,
                "get_weather",
                "rejected",
                "provider_name: 'refund_payment' is already used here",
            ),
        ],
        errors=[ERROR],
    )


def key(scope: str, name: str = "", **options: Any) -> APIClient:
    api = APIClient()
    secret = make_client_key(name or f"{scope}-reader", scope, **options)
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return api


def api_job(api: APIClient, job: Job) -> dict[str, Any]:
    response = api.get(f"/api/v1/jobs/{job.pk}/")
    assert response.status_code == 200, response.content
    return dict(response.json())


def named_nowhere(text: str) -> None:
    for name in HIDDEN:
        assert name not in text


def test_an_agent_key_sees_only_items_of_tools_it_could_be_offered(job):
    data = api_job(key("agent", roles=["support"]), job)
    assert [(i["index"], i["name"]) for i in data["items"]] == [
        (0, "get_weather"),
        (5, "get_weather"),
    ]
    assert data["hidden_items"] == 4
    assert data["errors"] == []
    assert data["hidden_errors"] == 1
    named_nowhere(str(data))


def test_a_refusals_reason_is_withheld_from_an_agent(job):
    data = api_job(key("agent"), job)
    refused = next(i for i in data["items"] if i["index"] == 5)
    assert refused["outcome"] == "rejected"
    assert refused["reason"] == ""


def test_the_job_list_hides_the_same_items(job):
    response = key("agent").get("/api/v1/jobs/")
    assert response.status_code == 200
    [listed] = response.json()["results"]
    assert listed["hidden_items"] == 4
    named_nowhere(response.content.decode())


def test_a_role_or_the_unsafe_permission_shows_what_it_opens(job):
    billing = api_job(key("agent", "biller", roles=["billing"]), job)
    assert "refund_payment" in [i["name"] for i in billing["items"]]
    assert "wipe_disk" not in [i["name"] for i in billing["items"]]
    unsafe = api_job(key("agent", "daring", allow_unsafe=True), job)
    assert "wipe_disk" in [i["name"] for i in unsafe["items"]]
    assert "refund_payment" not in [i["name"] for i in unsafe["items"]]


@pytest.mark.parametrize("scope", ["curator", "compliance", "admin"])
def test_whole_catalog_readers_see_every_item_and_error(job, scope):
    data = api_job(key(scope), job)
    assert [i["index"] for i in data["items"]] == [0, 1, 2, 3, 4, 5]
    assert data["items"][5]["reason"].startswith("provider_name")
    assert (data["hidden_items"], data["errors"], data["hidden_errors"]) == (
        0,
        [ERROR],
        0,
    )


def test_the_console_job_page_counts_what_an_agent_person_cannot_see(job, client):
    client.force_login(make_user("mo"))
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "get_weather" in page
    named_nowhere(page)
    assert "4 more items about tools you cannot see" in page
    assert "1 error not shown" in page


def test_the_console_job_page_shows_a_curator_everything(job, client):
    client.force_login(make_user("carla", groups=("curator",)))
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    for name in HIDDEN:
        assert name in page
    assert "cannot see" not in page
    assert ERROR in page


def test_an_import_answer_is_the_curators_whole_job(db):
    ensure_default_catalog()
    api = key("curator")
    tool = {"name": "lookup_order", "description": "Look up an order."}
    response = api.post("/api/v1/catalogs/default/import", [tool], format="json")
    assert response.status_code == 202, response.content
    assert response.json()["hidden_items"] == 0
