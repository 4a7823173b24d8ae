"""The console's "Try it" page (/try/) and a catalog's selection settings page."""

from __future__ import annotations

import json
import re

import pytest
from django.utils.html import escape

from audit.models import AuditEvent
from audit.services import verify_chain
from catalog.services import ensure_default_catalog
from selection.models import SelectionSettings
from selection.services.settings import current_settings, update_selection_settings
from tests.factories import make_sample_catalog, make_tool

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}


@pytest.fixture
def catalog(db):
    """A small catalog with real embeddings of the bundled model."""
    return make_sample_catalog(
        "get_weather", "send_email", "delete_repository", "refund_payment"
    )


def try_it(client, *, htmx=True, **fields):
    data = {"catalog": "default", "max_candidates": "3", "min_score": "0.05"}
    headers = HTMX if htmx else {}
    return client.post("/try/", {**data, **fields}, headers=headers)


def picked(response):
    return re.findall(r'data-testid="pick-name">([^<]+)<', response.content.decode())


def reasons(response):
    return re.findall(r'data-testid="pick-reason">([^<]+)<', response.content.decode())


def field_errors(response, name):
    """The messages shown under one input of the try-it form."""
    html = response.content.decode()
    block = re.search(
        rf'id="errors-{name}"[^>]*>((?:<div class="field-error">[^<]*</div>)*)</div>',
        html,
    )
    return re.findall(r'class="field-error">([^<]+)<', block.group(1)) if block else []


# Try it ---------------------------------------------------------------------------


def test_the_try_it_page_needs_a_signed_in_user(client):
    response = client.get("/try/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_the_try_it_page_renders_the_form_for_any_signed_in_user(as_member, catalog):
    response = as_member.get("/try/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "<h1>Try it</h1>" in html
    assert 'name="query"' in html
    assert "treat as chat transcript (JSON messages)" in html
    assert ">default (hybrid)</option>" in html
    # agents do not read selection settings (they name tools it may not see)
    assert 'href="/catalogs/default/selection-settings/"' not in html
    assert 'hx-post="/try/"' in html
    assert "Results appear here." in html


def test_a_post_with_htmx_returns_only_the_results_with_the_pick_and_its_reason(
    as_member, catalog
):
    response = try_it(as_member, query="what's the weather like in Paris today?")
    assert response.status_code == 200
    html = response.content.decode()
    assert "<html" not in html
    assert html.lstrip().startswith('<section id="try-results"')
    assert picked(response)[0] == "get_weather"
    assert reasons(response)[0].strip()
    assert "Considered" in html
    assert 'data-testid="stat-considered">4<' in html
    assert "HX-Request" in response["Vary"]


def test_a_post_without_htmx_renders_the_whole_page_with_the_results(
    as_member, catalog
):
    response = try_it(as_member, htmx=False, query="send an email to Bob")
    assert response.status_code == 200
    html = response.content.decode()
    assert "<html" in html
    assert picked(response)[0] == "send_email"
    assert "requires approval" in html
    assert "send an email to Bob</textarea>" in html


def test_every_run_is_audited_like_an_api_call(as_member, catalog, member):
    before = AuditEvent.objects.count()
    try_it(as_member, query="weather in Paris")
    assert AuditEvent.objects.count() == before + 1
    event = AuditEvent.objects.order_by("-id").first()
    assert event.actor_name == member.get_username()
    assert event.input["request"]["explain"] is True


def test_a_min_score_out_of_range_is_an_error_naming_min_score_and_keeps_the_input(
    as_member, catalog
):
    before = AuditEvent.objects.count()
    response = try_it(as_member, htmx=False, query="weather in Paris", min_score="2")
    assert response.status_code == 200
    assert any(e.startswith("min_score:") for e in field_errors(response, "min_score"))
    html = response.content.decode()
    assert 'name="min_score" value="2"' in html
    assert "weather in Paris</textarea>" in html
    assert picked(response) == []
    assert AuditEvent.objects.count() == before


def test_an_htmx_error_comes_back_in_the_results_and_on_its_input(as_member, catalog):
    response = try_it(as_member, query="weather", max_candidates="0")
    html = response.content.decode()
    assert "Nothing was selected." in html
    assert 'id="errors-max_candidates" hx-swap-oob="true"' in html
    assert any(
        e.startswith("max_candidates:")
        for e in field_errors(response, "max_candidates")
    )


def test_asking_for_a_role_the_user_lacks_is_an_error_naming_roles(as_member, catalog):
    response = try_it(as_member, htmx=False, query="refund it", roles="finance")
    errors = field_errors(response, "roles")
    assert errors
    assert errors[0].startswith("roles:")
    assert "finance" in errors[0]
    assert picked(response) == []


def test_an_admin_may_ask_for_any_role(client, admin_user, catalog):
    client.force_login(admin_user)
    response = try_it(client, query="refund the card payment", roles="finance")
    assert "refund_payment" in picked(response)


def test_a_chat_transcript_is_sent_as_messages(as_member, catalog):
    transcript = [
        {"role": "user", "content": "what's the weather in Paris?"},
        {"role": "assistant", "content": "Sunny, 21C."},
        {"role": "user", "content": "great, email that to Bob"},
    ]
    response = try_it(as_member, query=json.dumps(transcript), as_messages="on")
    assert picked(response)[0] == "send_email"


def test_a_transcript_that_is_not_json_is_an_error_on_the_query(as_member, catalog):
    response = try_it(as_member, htmx=False, query="hello there", as_messages="on")
    errors = field_errors(response, "query")
    assert errors
    assert errors[0].startswith("query: not valid JSON")


def test_a_request_with_no_query_is_an_error_on_the_query(as_member, catalog):
    response = try_it(as_member, htmx=False, query="")
    assert field_errors(response, "query") == [
        "query: give exactly one of query or messages"
    ]


def test_exclusions_are_grouped_by_stage_with_their_reason_code(as_curator, catalog):
    response = try_it(as_curator, query="delete the code repository")
    html = response.content.decode()
    assert "delete_repository" not in picked(response)
    policy = html.split('data-stage="policy"')[1].split("</details>")[0]
    assert "delete_repository" in policy
    assert "<code>unsafe</code>" in policy
    assert 'data-stage="rank"' in html


def test_an_empty_answer_says_no_tool_applies_and_shows_the_closest_tools(
    as_member, catalog
):
    response = try_it(as_member, query="weather in Paris", min_score="0.99")
    html = response.content.decode()
    assert picked(response) == []
    assert "No tool applies to this request" in html
    misses = html.split('class="table compact near-misses"')[1].split("</table>")[0]
    assert "get_weather" in misses


def test_a_core_tool_is_badged_as_core(as_member, catalog, curator):
    update_selection_settings(catalog, {"core_tools": ["send_email"]}, actor=curator)
    response = try_it(as_member, query="weather in Paris")
    html = response.content.decode()
    assert "send_email" in picked(response)
    card = html.split('data-tool="send_email"')[1].split("</li>")[0]
    assert '<span class="badge core">core</span>' in card


def test_a_degraded_answer_shows_a_warning(as_member, catalog):
    response = try_it(as_member, query="weather in Paris", timeout_ms="0")
    assert 'data-testid="degraded"' in response.content.decode()


def test_an_answer_ranked_by_words_alone_says_so_and_why(as_member):
    make_tool(name="get_weather", description="Current weather for a city.")
    html = try_it(as_member, query="weather in Paris").content.decode()
    notice = html.split('data-testid="words-only"')[1].split("</div>")[0]
    assert "Ranked by words alone." in notice
    assert "tool embeddings are not ready (1 of 1 tools" in notice


def test_an_answer_with_embeddings_has_no_words_only_notice(as_member, catalog):
    html = try_it(as_member, query="weather in Paris").content.decode()
    assert 'data-testid="words-only"' not in html


def test_the_rankings_list_reads_as_the_sum_of_the_counters_it_joins(as_member):
    make_sample_catalog()
    html = try_it(
        as_member, query="send an email", max_candidates="1", min_score="0.05"
    ).content.decode()
    counters = dict(re.findall(r'data-testid="stat-(\w+)">(\d+)<', html))
    listed = re.search(r'data-testid="listed-rank">(\d+) listed<', html)
    breakdown = re.search(r'data-testid="breakdown-rank">([^<]+)<', html)
    assert "Ranked out (below the picks)" in html
    assert "By the ranking" in html and "By rank " not in html
    assert breakdown is not None, html
    parts = dict(
        (label, int(count))
        for count, label in re.findall(r"(\d+) ([a-z ]+)", breakdown.group(1))
    )
    assert parts["ranked out"] == int(counters["cut"])
    assert parts["below min score"] == int(counters["below"])
    assert int(listed.group(1)) == sum(parts.values())


# Selection settings ---------------------------------------------------------------


def settings_url(slug="default"):
    return f"/catalogs/{slug}/selection-settings/"


def post_settings(client, data, slug="default"):
    return client.post(settings_url(slug), {"settings": json.dumps(data)})


def test_the_settings_page_shows_the_effective_settings_and_their_version(
    as_compliance, db
):
    ensure_default_catalog()
    response = as_compliance.get(settings_url())
    assert response.status_code == 200
    html = response.content.decode()
    assert 'data-testid="settings-version">0<' in html
    assert "&quot;candidate_pool&quot;: 50" in html
    assert "readonly" in html
    assert "Save settings" not in html


def test_a_curator_saves_a_valid_change_and_the_version_goes_up(as_curator, db):
    catalog = ensure_default_catalog()
    data, version = current_settings(catalog)
    response = post_settings(as_curator, {**data, "candidate_pool": 30})
    assert response.status_code == 302
    assert response["Location"] == settings_url()
    saved, new_version = current_settings(catalog)
    assert new_version == version + 1
    assert saved["candidate_pool"] == 30
    # Only what differs from the defaults is stored.
    assert SelectionSettings.objects.get(catalog=catalog).data == {"candidate_pool": 30}
    page = as_curator.get(settings_url()).content.decode()
    assert f'data-testid="settings-version">{new_version}<' in page
    assert f"Saved selection settings v{new_version}." in page


def test_a_settings_change_is_recorded_in_the_audit_chain(as_curator, db):
    catalog = ensure_default_catalog()
    data, _ = current_settings(catalog)
    post_settings(as_curator, {**data, "candidate_pool": 30})
    event = AuditEvent.objects.get(event_type="settings")
    assert event.actor_name == "carla"
    assert event.catalog_slug == "default"
    assert event.input == {"before": {}, "after": {"candidate_pool": 30}}
    assert event.output == {"settings_version": 1}
    assert verify_chain().ok


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"candidate_pool": 0}, "settings.candidate_pool:"),
        ({"no_such_setting": 1}, "settings.no_such_setting:"),
        ({"hybrid_weights": {"embed": 2}}, "settings.hybrid_weights.embed:"),
    ],
)
def test_an_invalid_setting_is_shown_by_field_name_and_nothing_is_saved(
    as_curator, db, change, named
):
    catalog = ensure_default_catalog()
    data, version = current_settings(catalog)
    typed = {**data, **change}
    response = post_settings(as_curator, typed)
    assert response.status_code == 200
    html = response.content.decode()
    assert "The settings were not saved." in html
    assert named in html
    assert escape(json.dumps(typed)) in html
    assert current_settings(catalog)[1] == version


def test_settings_that_are_not_a_json_object_are_refused(as_curator, db):
    catalog = ensure_default_catalog()
    response = as_curator.post(settings_url(), {"settings": "[1, 2"})
    assert "settings: not valid JSON" in response.content.decode()
    response = as_curator.post(settings_url(), {"settings": "[1, 2]"})
    assert "settings: must be a JSON object" in response.content.decode()
    assert current_settings(catalog)[1] == 0


def test_a_member_cannot_save_settings(as_member, db):
    catalog = ensure_default_catalog()
    response = post_settings(as_member, {"candidate_pool": 30})
    assert response.status_code == 403
    assert current_settings(catalog)[1] == 0
    assert not AuditEvent.objects.filter(event_type="settings").exists()


def test_the_settings_of_an_unknown_catalog_are_not_found(as_curator, db):
    assert as_curator.get(settings_url("nope")).status_code == 404


def test_the_try_it_counts_add_up_to_the_tools_considered(as_curator, catalog):
    html = try_it(as_curator, query="delete the code repository").content.decode()

    def count(name):
        return int(re.search(rf'data-testid="stat-{name}">(\d+)', html).group(1))

    parts = ("picked", "policy", "below", "threshold", "cut", "no-evidence")
    assert sum(count(p) for p in parts) == count("considered")
    assert count("policy") >= 1
