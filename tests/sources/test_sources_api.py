"""The sources API: admins add, list, read, edit, delete, sync and test sources;
everyone else gets 404 for a catalog they cannot see and 403 otherwise; every
write is one source_changed event; bad input is a 400 naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from audit.models import AuditEvent
from catalog.choices import ToolStatus
from catalog.models import Catalog, Tool
from identity.models import UserCatalogAccess
from jobs.choices import JobKind
from sources.models import Source
from sources.secrets import MASK
from tests.factories import make_user
from tests.sources.conftest import SECRET, sync

pytestmark = pytest.mark.django_db

SOURCES = "/api/v1/catalogs/default/sources"


def body(url: str, **fields: Any) -> dict[str, Any]:
    return {"name": "weather", "kind": "mcp", "url": url, **fields}


def source_events() -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(event_type="source_changed").order_by("id"))


def test_an_admin_adds_a_source_and_reads_it_back_masked(admin_api, upstream):
    answer = admin_api.post(
        SOURCES, body(upstream.url, headers={"Authorization": SECRET}), format="json"
    )

    assert answer.status_code == 201, answer.json()
    data = answer.json()
    assert data["id"] and data["tool_count"] == 0
    # Its first sync is queued with it (tests/sources/test_first_sync.py).
    assert data["status"] == "syncing" and data["sync_job"]["state"] == "queued"
    assert data["headers"] == {"Authorization": MASK}
    read = admin_api.get(f"/api/v1/sources/{data['id']}").json()
    assert read["headers"] == {"Authorization": MASK}
    assert read["last_synced"] is None and read["last_error"] == ""
    listed = admin_api.get(SOURCES).json()
    assert [s["name"] for s in listed["results"]] == ["weather"]
    [event] = source_events()
    assert event.input["action"] == "create"
    assert event.input["header_names"] == ["Authorization"]


def test_sync_answers_202_with_the_job_and_get_shows_the_outcome(admin_api, upstream):
    created = admin_api.post(SOURCES, body(upstream.url), format="json").json()

    answer = admin_api.post(f"/api/v1/sources/{created['id']}/sync")

    assert answer.status_code == 202
    job = answer.json()
    assert job["kind"] == JobKind.SYNC and job["state"] == "queued"
    # The same sync again while it waits: the same job, not a second one.
    again = admin_api.post(f"/api/v1/sources/{created['id']}/sync").json()
    assert again["id"] == job["id"]
    sync(Source.objects.get(pk=created["id"]))  # what the worker does
    read = admin_api.get(f"/api/v1/sources/{created['id']}").json()
    assert read["status"] == "ok" and read["tool_count"] == 7
    assert read["last_synced"] and "7 created" in read["last_outcome"]


def test_test_connection_answers_ok_or_the_reason(admin_api, upstream):
    created = admin_api.post(SOURCES, body(upstream.url), format="json").json()
    answer = admin_api.post(f"/api/v1/sources/{created['id']}/test").json()
    assert answer["ok"] is True and answer["tools_on_first_page"] == 3
    assert answer["more_pages"] is True

    upstream.required_headers = {"authorization": SECRET}
    refused = admin_api.post(f"/api/v1/sources/{created['id']}/test").json()
    assert refused["ok"] is False and "401" in refused["reason"]


def test_an_admin_edits_the_url_and_headers_and_the_name_is_fixed(admin_api, upstream):
    created = admin_api.post(
        SOURCES, body(upstream.url, headers={"X-Key": "one-secret"}), format="json"
    ).json()
    url = f"/api/v1/sources/{created['id']}"

    kept = admin_api.patch(url, {"headers": {"X-Key": MASK}}, format="json")
    assert kept.status_code == 200
    changed = admin_api.patch(
        url, {"headers": {"X-Key": "two-secret"}, "timeout_seconds": 5}, format="json"
    )
    renamed = admin_api.patch(url, {"name": "other"}, format="json")

    assert changed.status_code == 200 and changed.json()["timeout_seconds"] == 5
    assert renamed.status_code == 400 and "name" in renamed.json()["fields"]
    events = source_events()
    assert [e.input["action"] for e in events] == ["create", "update"]
    assert events[1].input["changed"] == ["headers", "timeout_seconds"]
    from sources.secrets import decrypt_headers

    assert decrypt_headers(Source.objects.get(pk=created["id"])) == {
        "X-Key": "two-secret"
    }


def test_deleting_a_source_disables_its_tools_and_keeps_them(admin_api, upstream):
    created = admin_api.post(SOURCES, body(upstream.url), format="json").json()
    sync(Source.objects.get(pk=created["id"]))

    answer = admin_api.delete(f"/api/v1/sources/{created['id']}")

    assert answer.status_code == 204
    assert not Source.objects.exists()
    tools = Tool.objects.filter(name__startswith="weather__")
    assert tools.count() == 7
    assert set(tools.values_list("status", flat=True)) == {ToolStatus.DISABLED}
    assert source_events()[-1].input["action"] == "delete"


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"kind": "stdio"}, "kind"),
        ({"name": "Has_Underscore"}, "name"),
        ({"url": "ftp://example.com/mcp"}, "url"),
        ({"url": "not a url"}, "url"),
        ({"url": "http://user:pw@example.com/mcp"}, "url"),
        ({"headers": {"Host": "evil"}}, "headers"),
        ({"headers": {"X-Key": "a\r\nInjected: 1"}}, "headers"),
        ({"headers": {"bad name": "x"}}, "headers"),
        ({"timeout_seconds": 0}, "timeout_seconds"),
        ({"command": "rm -rf /"}, "command"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(admin_api, fields, field):
    given = {**body("http://127.0.0.1:9/mcp"), **fields}
    answer = admin_api.post(SOURCES, given, format="json")
    assert answer.status_code == 400, answer.json()
    assert field in answer.json()["fields"]
    assert not Source.objects.exists() and not source_events()


def test_a_second_source_of_the_same_name_is_refused(admin_api, upstream):
    admin_api.post(SOURCES, body(upstream.url), format="json")
    again = admin_api.post(SOURCES, body(upstream.url), format="json")
    assert again.status_code == 400 and "name" in again.json()["fields"]


def test_stdio_is_never_creatable_over_the_api(admin_api):
    answer = admin_api.post(
        SOURCES,
        {"name": "local", "kind": "stdio", "url": "http://127.0.0.1:9/mcp"},
        format="json",
    )
    assert answer.status_code == 400
    assert "settings file" in answer.json()["fields"]["kind"][0]


@pytest.fixture
def weather_source(make_source, upstream) -> Source:
    return make_source(upstream.url, headers={"Authorization": SECRET})


@pytest.mark.parametrize("persona", ["curator", "compliance", "member"])
def test_non_admins_who_see_the_catalog_get_403_everywhere(
    api, weather_source, persona, request
):
    api.force_login(request.getfixturevalue(persona))
    one = f"/api/v1/sources/{weather_source.pk}"
    answers = [
        api.get(SOURCES),
        api.post(SOURCES, body("http://127.0.0.1:9/mcp", name="x"), format="json"),
        api.get(one),
        api.patch(one, {"timeout_seconds": 3}, format="json"),
        api.delete(one),
        api.post(f"{one}/sync"),
        api.post(f"{one}/test"),
    ]
    assert [a.status_code for a in answers] == [403] * 7
    assert Source.objects.count() == 1 and len(source_events()) == 1


def test_an_agent_key_gets_403_and_never_a_header(with_key, weather_source):
    api = with_key("agent")
    answer = api.get(f"/api/v1/sources/{weather_source.pk}")
    assert answer.status_code == 403
    assert "sk-upstream" not in answer.content.decode()


def test_an_admin_of_another_catalog_gets_404_for_this_ones_sources(
    api, weather_source
):
    Catalog.objects.create(slug="other", name="Other")
    limited = make_user("ada", groups=("admin",))
    UserCatalogAccess.objects.create(user=limited, catalogs=["other"])
    api.force_login(limited)
    one = f"/api/v1/sources/{weather_source.pk}"
    answers = [
        api.get(SOURCES),
        api.post(SOURCES, body("http://127.0.0.1:9/mcp", name="x"), format="json"),
        api.get(one),
        api.patch(one, {"timeout_seconds": 3}, format="json"),
        api.delete(one),
        api.post(f"{one}/sync"),
        api.post(f"{one}/test"),
    ]
    assert [a.status_code for a in answers] == [404] * 7
    assert api.get("/api/v1/catalogs/other/sources").status_code == 200


def test_an_admin_key_limited_to_another_catalog_gets_404(with_key, weather_source):
    Catalog.objects.create(slug="other", name="Other")
    api = with_key("admin", catalogs=["other"])
    assert api.get(f"/api/v1/sources/{weather_source.pk}").status_code == 404
    assert api.get(SOURCES).status_code == 404


def test_an_unknown_source_is_404(admin_api):
    assert admin_api.get("/api/v1/sources/999999").status_code == 404
    assert admin_api.get("/api/v1/catalogs/nope/sources").status_code == 404
