"""GET /api/v1/catalogs/{slug}/selection-settings/versions and POST
.../versions/{n}/restore: the history is read by whoever reads the settings
(curators, compliance, admins; agents 403, other catalogs 404), a restore makes a
new version equal to version n and is audited as a settings change."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from audit.models import AuditEvent
from catalog.services import create_catalog
from catalog.services.catalogs import ensure_default_catalog
from selection.models import SelectionSettings, SelectionSettingsChange
from selection.services.settings import update_selection_settings
from tests.factories import make_client_key, make_tool

pytestmark = pytest.mark.django_db

VERSIONS = "/api/v1/catalogs/{slug}/selection-settings/versions"
RESTORE = "/api/v1/catalogs/{slug}/selection-settings/versions/{n}/restore"


@pytest.fixture
def three_versions(db) -> Any:
    """v1 pool 30, v2 pool 40 with a core tool, v3 pool 60."""
    catalog = ensure_default_catalog()
    make_tool(name="get_weather")
    update_selection_settings(catalog, {"candidate_pool": 30}, actor=None)
    update_selection_settings(
        catalog,
        {"candidate_pool": 40, "core_tools": ["get_weather"]},
        actor=None,
        reason="weather first",
    )
    update_selection_settings(catalog, {"candidate_pool": 60}, actor=None)
    return catalog


def key(scope: str, **options: Any) -> APIClient:
    api = APIClient()
    secret = make_client_key(f"{scope}-key", scope, **options)
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return api


def test_a_curator_lists_every_version_newest_first_with_who_why_and_the_diff(
    three_versions,
):
    response = key("curator").get(VERSIONS.format(slug="default"))
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["count"] == 3
    assert [v["version"] for v in body["results"]] == [3, 2, 1]
    second = body["results"][1]
    assert second["actor"] == "system"
    assert second["reason"] == "weather first"
    assert second["created"]
    assert second["settings"] == {"candidate_pool": 40, "core_tools": ["get_weather"]}
    changed = {row["field"]: row for row in second["changes"]}
    assert set(changed) == {"candidate_pool", "core_tools"}
    assert (changed["candidate_pool"]["old"], changed["candidate_pool"]["new"]) == (
        "30",
        "40",
    )
    # v3 puts core_tools back to its default, and the diff shows it.
    third = {row["field"] for row in body["results"][0]["changes"]}
    assert third == {"candidate_pool", "core_tools"}


def test_the_versions_are_paged_with_a_count(three_versions):
    for pool in range(10, 70):
        update_selection_settings(three_versions, {"candidate_pool": pool}, actor=None)
    admin = key("admin")
    body = admin.get(VERSIONS.format(slug="default")).json()
    assert body["count"] == 63
    assert len(body["results"]) == 50
    assert body["next"]
    rest = admin.get(VERSIONS.format(slug="default") + "?page=2").json()
    assert [v["version"] for v in rest["results"]] == list(range(13, 0, -1))


@pytest.mark.parametrize("scope", ["curator", "compliance", "admin"])
def test_whoever_reads_the_settings_reads_their_history(three_versions, scope):
    assert key(scope).get(VERSIONS.format(slug="default")).status_code == 200


@pytest.mark.parametrize(
    "options", [{}, {"allow_unsafe": True}], ids=["plain", "unsafe"]
)
def test_an_agent_may_not_read_the_history(three_versions, options):
    response = key("agent", **options).get(VERSIONS.format(slug="default"))
    assert response.status_code == 403
    assert response.json()["error"] == "permission_denied"
    assert "get_weather" not in response.content.decode()


def test_a_curator_of_another_catalog_learns_nothing_of_this_ones_history(
    three_versions,
):
    create_catalog("elsewhere", "Elsewhere")
    outsider = key("curator", catalogs=["elsewhere"])
    assert outsider.get(VERSIONS.format(slug="default")).status_code == 404
    rows = AuditEvent.objects.count()
    response = outsider.post(RESTORE.format(slug="default", n=1), {}, format="json")
    assert response.status_code == 404
    assert AuditEvent.objects.count() == rows
    assert SelectionSettings.objects.get(catalog=three_versions).version == 3
    # Its own catalog's (empty) history is fine.
    assert outsider.get(VERSIONS.format(slug="elsewhere")).json()["count"] == 0


def test_a_restore_makes_a_new_version_equal_to_version_n_and_audits_it(
    three_versions,
):
    curator = key("curator")
    rows = AuditEvent.objects.filter(event_type="settings").count()
    response = curator.post(RESTORE.format(slug="default", n=2), {}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["version"] == 4
    assert body["settings"]["candidate_pool"] == 40
    assert body["settings"]["core_tools"] == ["get_weather"]
    row = SelectionSettings.objects.get(catalog=three_versions)
    assert (row.version, row.data) == (
        4,
        {"candidate_pool": 40, "core_tools": ["get_weather"]},
    )
    change = SelectionSettingsChange.objects.get(catalog=three_versions, version=4)
    assert change.before == {"candidate_pool": 60}
    assert change.reason == "restored version 2"
    assert change.actor_name == "api:curator-key"
    events = AuditEvent.objects.filter(event_type="settings")
    assert events.count() == rows + 1
    event = events.order_by("-id").first()
    assert event.actor_name == "api:curator-key"
    assert event.input["after"] == change.after
    assert event.input["before"] == {"candidate_pool": 60}
    assert event.input["restored_from"] == 2
    assert event.output == {"settings_version": 4}
    # History is never rewritten: versions 1-3 are still there as they were.
    kept = SelectionSettingsChange.objects.filter(catalog=three_versions)
    assert sorted(kept.values_list("version", flat=True)) == [1, 2, 3, 4]


@pytest.mark.parametrize("n", [0, 4, 99, 2**31, 2**70])
def test_restoring_an_unknown_version_is_404_and_writes_nothing(three_versions, n):
    curator = key("curator")
    rows = AuditEvent.objects.count()
    response = curator.post(RESTORE.format(slug="default", n=n), {}, format="json")
    assert response.status_code == 404, response.content
    assert "version" in response.json()["detail"]
    assert AuditEvent.objects.count() == rows
    assert SelectionSettings.objects.get(catalog=three_versions).version == 3


def test_restoring_a_version_of_another_catalog_is_404(three_versions):
    other = create_catalog("elsewhere", "Elsewhere")
    update_selection_settings(other, {"candidate_pool": 7}, actor=None)
    response = key("curator").post(
        RESTORE.format(slug="elsewhere", n=2), {}, format="json"
    )
    assert response.status_code == 404


@pytest.mark.parametrize("scope", ["agent", "compliance"])
def test_only_curators_and_admins_restore(three_versions, scope):
    caller = key(scope)
    rows = AuditEvent.objects.count()
    response = caller.post(RESTORE.format(slug="default", n=1), {}, format="json")
    assert response.status_code == 403
    assert AuditEvent.objects.count() == rows


def test_a_restore_refuses_body_fields_it_does_not_know(three_versions):
    response = key("admin").post(
        RESTORE.format(slug="default", n=1), {"version": 2}, format="json"
    )
    assert response.status_code == 400
    assert "version" in response.json()["fields"]


def test_a_save_through_the_api_keeps_its_reason(three_versions):
    response = key("curator").put(
        "/api/v1/catalogs/default/selection-settings",
        {"settings": {"candidate_pool": 70}, "reason": "bigger pool"},
        format="json",
    )
    assert response.status_code == 200, response.content
    change = SelectionSettingsChange.objects.get(catalog=three_versions, version=4)
    assert change.reason == "bigger pool"
    event = AuditEvent.objects.filter(event_type="settings").order_by("-id").first()
    assert event.input["reason"] == "bigger pool"


def test_a_too_long_reason_is_refused_naming_the_field(three_versions):
    response = key("curator").put(
        "/api/v1/catalogs/default/selection-settings",
        {"settings": {"candidate_pool": 70}, "reason": "x" * 501},
        format="json",
    )
    assert response.status_code == 400
    assert "reason" in response.json()["fields"]


def test_a_restore_counts_against_the_keys_rate_limit(three_versions, monkeypatch):
    from config import ratelimit
    from identity.models import ApiClient

    counter = ratelimit.Counter()
    counter._redis_down_until = float("inf")
    monkeypatch.setattr(ratelimit, "COUNTER", counter)
    monkeypatch.setattr(ratelimit, "clock", lambda: 1_800_000_010.0)
    curator = key("curator")
    ApiClient.objects.filter(name="curator-key").update(rate_limit_per_minute=1)
    url = RESTORE.format(slug="default", n=1)
    assert curator.post(url, {}, format="json").status_code == 200
    rows = AuditEvent.objects.count()
    assert curator.post(url, {}, format="json").status_code == 429
    assert AuditEvent.objects.count() == rows
    # Reading the history is free.
    assert curator.get(VERSIONS.format(slug="default")).status_code == 200
