"""Before saving, "try with these settings" answers the request under the saved and
the proposed settings side by side, saving nothing (each answer audited, as Try it
is); the history page shows every version with its diff, and a restore makes a new
version equal to the one restored, audited like any save."""

from __future__ import annotations

import re
from typing import Any

import pytest

from audit.models import AuditEvent
from catalog.services import create_catalog
from catalog.services.catalogs import ensure_default_catalog
from config import ratelimit
from selection.models import SelectionSettings, SelectionSettingsChange
from selection.services.settings import current_settings, update_selection_settings
from tests.factories import make_tool, make_user
from tests.selection.test_settings_form import form_post

pytestmark = pytest.mark.django_db

TRY = "/catalogs/{slug}/selection-settings/try/"
HISTORY = "/catalogs/{slug}/selection-settings/history/"
RESTORE = "/catalogs/{slug}/selection-settings/versions/{n}/restore/"
HTMX = {"HX-Request": "true"}


@pytest.fixture
def catalog(db) -> Any:
    catalog = ensure_default_catalog()
    make_tool(catalog, "refund_payment", description="Refund a customer's payment.")
    make_tool(catalog, "send_email", description="Send an email to a customer.")
    make_tool(catalog, "get_weather", description="Weather forecast for a city.")
    return catalog


def picks(html: str, side: str) -> list[tuple[str, str]]:
    """(tool, move) of one column of the comparison."""
    found = re.search(
        rf'data-testid="{side}-answer">(.*?)</div>\s*(<div class="card|</div>)',
        html,
        re.S,
    )
    assert found, f"no {side} column"
    column = found.group(1)
    rows = re.findall(r'data-tool="([^"]+)">(.*?)</li>', column, re.S)
    return [
        (name, (re.findall(r'data-testid="move">([^<]*)<', body) or [""])[0])
        for name, body in rows
    ]


def try_settings(client: Any, catalog: Any, query: str, **changes: Any) -> Any:
    body = {**form_post(catalog, **changes), "try_query": query}
    return client.post(TRY.format(slug=catalog.slug), body, headers=HTMX)


def test_the_proposed_settings_answer_beside_the_saved_ones(as_curator, catalog):
    response = try_settings(
        as_curator, catalog, "refund the payment", core_tools=["send_email"]
    )
    assert response.status_code == 200
    html = response.content.decode()
    saved = picks(html, "saved")
    proposed = picks(html, "proposed")
    assert saved[0][0] == "refund_payment"
    assert "send_email" not in [name for name, _ in saved]
    assert ("send_email", "new") in proposed
    assert "<html" not in html  # a fragment for htmx


def test_trying_saves_nothing_and_audits_each_answer_as_try_it_does(
    as_curator, catalog
):
    try_settings(as_curator, catalog, "refund the payment", core_tools=["send_email"])
    assert current_settings(catalog)[1] == 0
    assert not SelectionSettings.objects.filter(catalog=catalog).exists()
    assert not AuditEvent.objects.filter(event_type="settings").exists()
    rows = list(AuditEvent.objects.filter(event_type="selection").order_by("id"))
    assert len(rows) == 2
    saved, proposed = rows
    assert saved.input["channel"] == "api"
    assert "proposed_settings" not in saved.input
    assert proposed.input["channel"] == "try-settings"
    assert proposed.input["proposed_settings"]["core_tools"] == ["send_email"]
    assert all(row.actor_name == "carla" for row in rows)


def test_a_proposed_answer_never_reaches_the_answer_cache(as_curator, catalog):
    for _ in range(2):
        html = try_settings(
            as_curator, catalog, "refund the payment", core_tools=["send_email"]
        ).content.decode()
        assert "send_email" not in [name for name, _ in picks(html, "saved")]
    page = as_curator.post(
        "/try/",
        {"catalog": "default", "query": "refund the payment", "max_candidates": "3"},
        headers=HTMX,
    ).content.decode()
    offered = re.findall(r'data-testid="pick-name">([^<]+)<', page)
    assert "send_email" not in offered


def test_proposed_lexical_settings_rank_with_their_own_index(as_curator, catalog):
    html = try_settings(
        as_curator,
        catalog,
        "refund the payment",
        default_scorer="bm25f",
        field_weights__description="0",
        field_weights__name="0",
        field_weights__keywords="0",
        field_weights__examples="0",
        field_weights__title="0",
    ).content.decode()
    assert picks(html, "saved")[0][0] == "refund_payment"
    assert picks(html, "proposed") == []


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"candidate_pool": "0"}, "candidate_pool: must be between 1 and 1000"),
        ({"core_tools": ["nope"]}, "core_tools: &#x27;nope&#x27; is not a tool"),
        ({"try_query": ""}, "try_query: type a request to try the settings on"),
    ],
)
def test_a_bad_proposal_is_named_and_nothing_runs(
    as_curator, catalog, changes, problem
):
    query = changes.pop("try_query", "refund the payment")
    html = try_settings(as_curator, catalog, query, **changes).content.decode()
    assert 'data-testid="try-settings-errors"' in html
    assert problem in html
    assert not AuditEvent.objects.filter(event_type="selection").exists()


def test_the_raw_json_can_be_tried_too(as_curator, catalog):
    response = as_curator.post(
        TRY.format(slug="default"),
        {"settings": '{"core_tools": ["get_weather"]}', "try_query": "refund it"},
        headers=HTMX,
    )
    assert ("get_weather", "new") in picks(response.content.decode(), "proposed")


def test_an_agent_may_not_try_settings(catalog, client):
    client.force_login(make_user("mo"))
    response = client.post(
        TRY.format(slug="default"), form_post(catalog, try_query="refund")
    )
    assert response.status_code == 403
    assert not AuditEvent.objects.filter(event_type="selection").exists()


def test_a_curator_of_another_catalog_cannot_try_this_ones(catalog, client):
    from identity.models import UserCatalogAccess

    create_catalog("elsewhere", "Elsewhere")
    curator = make_user("other", groups=("curator",))
    UserCatalogAccess.objects.create(user=curator, catalogs=["elsewhere"])
    client.force_login(curator)
    body = form_post(catalog, try_query="refund")
    assert client.post(TRY.format(slug="default"), body).status_code == 404
    assert client.get(HISTORY.format(slug="default")).status_code == 404
    assert client.post(RESTORE.format(slug="default", n=1)).status_code == 404
    assert not AuditEvent.objects.filter(event_type="selection").exists()
    assert not AuditEvent.objects.filter(event_type="settings").exists()


def test_a_try_costs_two_of_the_rate_limit_one_per_answer(
    as_curator, catalog, settings, monkeypatch
):
    counter = ratelimit.Counter()
    counter._redis_down_until = float("inf")
    monkeypatch.setattr(ratelimit, "COUNTER", counter)
    monkeypatch.setattr(ratelimit, "clock", lambda: 1_800_000_010.0)
    settings.QUIVER_RATE_LIMIT_PER_MINUTE = 3
    assert try_settings(as_curator, catalog, "refund").status_code == 200
    rows = AuditEvent.objects.count()
    second = try_settings(as_curator, catalog, "refund")
    assert second.status_code == 429
    assert AuditEvent.objects.count() == rows


# History ---------------------------------------------------------------------------


@pytest.fixture
def versions(catalog) -> Any:
    update_selection_settings(catalog, {"candidate_pool": 30}, actor=None)
    update_selection_settings(
        catalog,
        {"candidate_pool": 40, "core_tools": ["get_weather"]},
        actor=None,
        reason="weather first",
    )
    return catalog


def test_the_history_shows_every_version_who_when_why_and_its_diff(
    as_curator, versions
):
    html = as_curator.get(HISTORY.format(slug="default")).content.decode()
    assert re.findall(r'data-testid="settings-version" data-version="(\d+)"', html) == [
        "2",
        "1",
    ]
    assert 'data-testid="version-reason">“weather first”' in html
    assert re.findall(r'data-testid="version-actor">([^<]+)<', html) == [
        "system",
        "system",
    ]
    second = html.split('data-version="1"')[0]
    assert '<tr data-field="candidate_pool">' in second
    assert '<td class="old">30</td><td class="new">40</td>' in second
    assert '<tr data-field="core_tools">' in second
    # One restore button, for the version that is not current.
    assert re.findall(r"Restore v(\d+)", html) == ["1"]


def test_compliance_reads_the_history_but_cannot_restore(versions, client):
    client.force_login(make_user("cora", groups=("compliance",)))
    html = client.get(HISTORY.format(slug="default")).content.decode()
    assert 'data-version="2"' in html
    assert "Restore v" not in html
    assert client.post(RESTORE.format(slug="default", n=1)).status_code == 403
    assert current_settings(versions)[1] == 2


def test_an_agent_sees_no_history(versions, client):
    client.force_login(make_user("mo"))
    response = client.get(HISTORY.format(slug="default"))
    assert response.status_code == 403
    assert "get_weather" not in response.content.decode()


def test_one_click_restore_makes_a_new_version_and_audits_it(as_curator, versions):
    response = as_curator.post(RESTORE.format(slug="default", n=1))
    assert response.status_code == 302
    assert response["Location"] == HISTORY.format(slug="default")
    row = SelectionSettings.objects.get(catalog=versions)
    assert (row.version, row.data) == (3, {"candidate_pool": 30})
    change = SelectionSettingsChange.objects.get(catalog=versions, version=3)
    assert change.reason == "restored version 1"
    assert change.actor_name == "carla"
    event = AuditEvent.objects.get(event_type="settings", actor_name="carla")
    assert event.input["restored_from"] == 1
    assert event.input["before"] == {
        "candidate_pool": 40,
        "core_tools": ["get_weather"],
    }
    assert event.input["after"] == {"candidate_pool": 30}
    page = as_curator.get(HISTORY.format(slug="default")).content.decode()
    assert "Restored version 1 as v3." in page
    assert 'data-testid="version-reason">“restored version 1”' in page


def test_restoring_an_unknown_version_is_404(as_curator, versions):
    for n in (0, 9, 2**40):
        response = as_curator.post(RESTORE.format(slug="default", n=n))
        assert response.status_code == 404
    assert current_settings(versions)[1] == 2


def test_a_restore_is_a_post(as_curator, versions):
    assert as_curator.get(RESTORE.format(slug="default", n=1)).status_code == 405
    assert current_settings(versions)[1] == 2
