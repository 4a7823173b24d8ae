"""The selection-settings page as a form: grouped fields with help, default and
range; tool names picked from the catalog; every refusal names its setting and
nothing is saved; the raw JSON view posts to the same service."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from audit.models import AuditEvent
from catalog.services import create_catalog
from catalog.services.catalogs import ensure_default_catalog
from selection.forms import SettingsFieldsForm
from selection.models import SelectionSettings, SelectionSettingsChange
from selection.services.settings import current_settings, update_selection_settings
from tests.factories import make_tool

pytestmark = pytest.mark.django_db

PAGE = "/catalogs/{slug}/selection-settings/"


@pytest.fixture
def catalog(db) -> Any:
    catalog = ensure_default_catalog()
    for name in ("get_weather", "send_email", "refund_payment"):
        make_tool(catalog, name)
    return catalog


def form_post(catalog: Any, **changes: Any) -> dict[str, Any]:
    """What the browser posts for the form as shown, with ``changes`` typed in."""
    data, _ = current_settings(catalog)
    form = SettingsFieldsForm(
        settings=data, tool_names=None, known_tools=lambda names: set(names)
    )
    body: dict[str, Any] = {}
    for name in form.fields:
        value = form[name].value()
        if isinstance(value, bool):
            if value:
                body[name] = "on"
        elif isinstance(value, list):
            body[name] = value
        else:  # a browser posts every text input, empty ones too
            body[name] = "" if value is None else str(value)
    body.update(changes)
    return {k: v for k, v in body.items() if v is not None}


def field_errors(html: str, name: str) -> list[str]:
    """The messages shown under input ``name``."""
    errors = r'((?:<div class="field-error">[^<]*</div>)*)</div>'
    block = re.search(rf'id="errors-{re.escape(name)}">{errors}', html)
    assert block, f"no error block for {name}"
    return re.findall(r'class="field-error">([^<]*)<', block.group(1))


def test_the_form_shows_every_group_with_help_defaults_and_ranges(as_curator, catalog):
    html = as_curator.get(PAGE.format(slug="default")).content.decode()
    for group in (
        "scorer",
        "weights",
        "thresholds",
        "pool",
        "field_weights",
        "anchors",
        "transitions",
        "core_tools",
    ):
        assert f'data-group="{group}"' in html
    pool = re.search(r'<input[^>]*name="candidate_pool"[^>]*>', html).group(0)
    assert 'min="1"' in pool and 'max="1000"' in pool and 'value="50"' in pool
    embed = re.search(r'<input[^>]*name="hybrid_weights__embed"[^>]*>', html).group(0)
    assert 'min="0"' in embed and 'max="1"' in embed
    assert "Nearest tools by meaning that ranking considers. Default: 50." in html
    assert "Range 1–1000." in html
    assert "Default 0.6" in html


def test_tool_names_are_picked_from_the_catalogs_names(as_curator, catalog):
    html = as_curator.get(PAGE.format(slug="default")).content.decode()
    core = re.search(r'<select name="core_tools".*?</select>', html, re.S).group(0)
    assert re.findall(r'<option value="([^"]+)"', core) == [
        "get_weather",
        "refund_payment",
        "send_email",
    ]
    first_from = re.search(
        r'<select name="transition_0_from".*?</select>', html, re.S
    ).group(0)
    assert '<option value="send_email"' in first_from
    assert 'name="anchor_0_tools"' in html


def test_a_catalog_too_big_to_list_gets_typed_names_checked_all_the_same(
    as_curator, catalog, monkeypatch
):
    monkeypatch.setattr("selection.views.TOOL_CHOICES_MAX", 2)
    html = as_curator.get(PAGE.format(slug="default")).content.decode()
    assert re.search(r'<input type="text" name="core_tools"', html)
    response = as_curator.post(
        PAGE.format(slug="default"), form_post(catalog, core_tools="get_weather, nope")
    )
    assert response.status_code == 200
    assert field_errors(response.content.decode(), "core_tools") == [
        "core_tools: &#x27;nope&#x27; is not a tool of this catalog"
    ]
    assert current_settings(catalog)[1] == 0


def test_the_form_as_shown_saves_nothing_new(as_curator, catalog):
    update_selection_settings(
        catalog,
        {
            "core_tools": ["send_email"],
            "micro_anchors": [
                {"pattern": "refund", "tools": ["refund_payment"], "boost": 2.0}
            ],
            "transitions": {"get_weather": {"send_email": 0.4}},
            "category_confidence_threshold": None,
            "exploration": True,
        },
        actor=None,
    )
    before = SelectionSettings.objects.get(catalog=catalog).data
    response = as_curator.post(PAGE.format(slug="default"), form_post(catalog))
    assert response.status_code == 302, response.content.decode()[:3000]
    row = SelectionSettings.objects.get(catalog=catalog)
    assert row.version == 2
    assert row.data == before


def test_a_change_saves_only_what_differs_from_the_defaults_with_its_reason(
    as_curator, catalog
):
    body = form_post(
        catalog,
        candidate_pool="30",
        hybrid_weights__tag="0.2",
        core_tools=["get_weather"],
        anchor_0_pattern=r"\brefund",
        anchor_0_tools=["refund_payment", "send_email"],
        anchor_0_boost="",
        transition_0_from="get_weather",
        transition_0_to="send_email",
        transition_0_p="0.5",
        reason="pool smaller, refunds boosted",
    )
    response = as_curator.post(PAGE.format(slug="default"), body)
    assert response.status_code == 302
    row = SelectionSettings.objects.get(catalog=catalog)
    assert row.data == {
        "candidate_pool": 30,
        "hybrid_weights": {
            "embed": 0.6,
            "lexical": 0.3,
            "bm25f": 0.1,
            "tag": 0.2,
            "name": 0.1,
            "category": 0.0,
        },
        "core_tools": ["get_weather"],
        "micro_anchors": [
            {
                "pattern": r"\brefund",
                "tools": ["refund_payment", "send_email"],
                "boost": 1.0,
            }
        ],
        "transitions": {"get_weather": {"send_email": 0.5}},
    }
    change = SelectionSettingsChange.objects.get(catalog=catalog, version=1)
    assert change.reason == "pool smaller, refunds boosted"
    event = AuditEvent.objects.get(event_type="settings")
    assert event.input["reason"] == "pool smaller, refunds boosted"
    assert event.actor_name == "carla"


def test_clearing_a_row_takes_the_anchor_out(as_curator, catalog):
    update_selection_settings(
        catalog,
        {"micro_anchors": [{"pattern": "refund", "tools": ["refund_payment"]}]},
        actor=None,
    )
    body = form_post(catalog, anchor_0_pattern="", anchor_0_tools=None)
    body.pop("anchor_0_tools", None)
    assert as_curator.post(PAGE.format(slug="default"), body).status_code == 302
    assert "micro_anchors" not in SelectionSettings.objects.get(catalog=catalog).data


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        (
            {"candidate_pool": "0"},
            "candidate_pool",
            "candidate_pool: must be between 1 and 1000",
        ),
        (
            {"candidate_pool": "many"},
            "candidate_pool",
            "candidate_pool: must be a number",
        ),
        (
            {"candidate_pool": "2.5"},
            "candidate_pool",
            "candidate_pool: must be a whole number",
        ),
        ({"candidate_pool": ""}, "candidate_pool", "candidate_pool: is required"),
        ({"bm25_b": "nan"}, "bm25_b", "bm25_b: must be a finite number"),
        (
            {"hybrid_weights__embed": "2"},
            "hybrid_weights__embed",
            "hybrid_weights.embed: must be between 0 and 1",
        ),
        (
            {"field_weights__name": "11"},
            "field_weights__name",
            "field_weights.name: must be between 0 and 10",
        ),
        (
            {"semantic_ceiling": "0.1"},
            "semantic_ceiling",
            "semantic_ceiling: must be above semantic_floor",
        ),
        (
            {"category_confidence_threshold": "1.5"},
            "category_confidence_threshold",
            "category_confidence_threshold: must be between 0 and 1",
        ),
        (
            {"default_scorer": "magic"},
            "default_scorer",
            "Select a valid choice. magic is not one of the available choices.",
        ),
        (
            {"core_tools": ["get_weather", "wipe_disk"]},
            "core_tools",
            "core_tools: &#x27;wipe_disk&#x27; is not a tool of this catalog",
        ),
        (
            {"anchor_0_pattern": "(?=x)y", "anchor_0_tools": ["get_weather"]},
            "anchor_0_pattern",
            "micro_anchors[0].pattern: is not a regular expression with a linear-time "
            "match",
        ),
        (
            {"anchor_0_pattern": "refund"},
            "anchor_0_tools",
            "micro_anchors[0].tools: must name at least one tool",
        ),
        (
            {"anchor_0_tools": ["get_weather"]},
            "anchor_0_pattern",
            "micro_anchors[0].pattern: is required",
        ),
        (
            {
                "anchor_0_pattern": "refund",
                "anchor_0_tools": ["get_weather"],
                "anchor_0_boost": "9",
            },
            "anchor_0_boost",
            "micro_anchors[0].boost: must be between 0 and 5",
        ),
        (
            {
                "transition_0_from": "get_weather",
                "transition_0_to": "send_email",
                "transition_0_p": "1.5",
            },
            "transition_0_p",
            "transitions.get_weather.send_email: must be between 0 and 1",
        ),
        (
            {"transition_0_from": "get_weather", "transition_0_p": "0.5"},
            "transition_0_to",
            "transitions[0].to: is required",
        ),
        (
            {
                "transition_0_from": "get_weather",
                "transition_0_to": "nope",
                "transition_0_p": "0.5",
            },
            "transition_0_to",
            "transitions[0].to: &#x27;nope&#x27; is not a tool of this catalog",
        ),
    ],
)
def test_a_bad_value_is_named_on_its_input_and_nothing_is_saved(
    as_curator, catalog, changes, field, message
):
    response = as_curator.post(
        PAGE.format(slug="default"), form_post(catalog, **changes)
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "The settings were not saved." in html
    assert any(e.startswith(message) for e in field_errors(html, field)), field_errors(
        html, field
    )
    assert current_settings(catalog)[1] == 0
    assert not AuditEvent.objects.filter(event_type="settings").exists()


def test_a_transition_given_twice_is_refused(as_curator, catalog):
    twice = {
        "transition_0_from": "get_weather",
        "transition_0_to": "send_email",
        "transition_0_p": "0.5",
        "transition_1_from": "get_weather",
        "transition_1_to": "send_email",
        "transition_1_p": "0.2",
    }
    html = as_curator.post(
        PAGE.format(slug="default"), form_post(catalog, **twice)
    ).content.decode()
    assert field_errors(html, "transition_1_to") == [
        "transitions.get_weather.send_email: is given twice"
    ]
    assert current_settings(catalog)[1] == 0


def test_a_tool_the_settings_name_but_the_catalog_lost_is_shown_and_must_go(
    as_curator, catalog
):
    update_selection_settings(catalog, {"core_tools": ["gone_tool"]}, actor=None)
    html = as_curator.get(PAGE.format(slug="default")).content.decode()
    assert "gone_tool (not in this catalog)" in html
    response = as_curator.post(PAGE.format(slug="default"), form_post(catalog))
    assert field_errors(response.content.decode(), "core_tools") == [
        "core_tools: &#x27;gone_tool&#x27; is not a tool of this catalog"
    ]
    ok = as_curator.post(
        PAGE.format(slug="default"), form_post(catalog, core_tools=["get_weather"])
    )
    assert ok.status_code == 302


def test_tool_names_of_another_catalog_are_not_tools_of_this_one(as_curator, catalog):
    other = create_catalog("elsewhere", "Elsewhere")
    make_tool(other, "only_elsewhere")
    response = as_curator.post(
        PAGE.format(slug="default"), form_post(catalog, core_tools=["only_elsewhere"])
    )
    assert "is not a tool of this catalog" in response.content.decode()
    assert current_settings(catalog)[1] == 0


def test_the_raw_json_view_is_kept_and_posts_to_the_same_service(as_curator, catalog):
    html = as_curator.get(PAGE.format(slug="default")).content.decode()
    assert "Raw JSON" in html
    assert "&quot;candidate_pool&quot;: 50" in html
    response = as_curator.post(
        PAGE.format(slug="default"),
        {"settings": '{"candidate_pool": 25}', "reason": "by hand"},
    )
    assert response.status_code == 302
    change = SelectionSettingsChange.objects.get(catalog=catalog, version=1)
    assert (change.after, change.reason) == ({"candidate_pool": 25}, "by hand")


def test_a_person_who_may_not_write_cannot_save_the_form(catalog, client: Client):
    from tests.factories import make_user

    client.force_login(make_user("cora", groups=("compliance",)))
    page = client.get(PAGE.format(slug="default")).content.decode()
    assert 'data-testid="save-settings"' not in page
    response = client.post(PAGE.format(slug="default"), form_post(catalog))
    assert response.status_code == 403
    assert current_settings(catalog)[1] == 0


def test_more_rows_than_a_form_may_carry_are_refused_by_name(as_curator, catalog):
    body = form_post(catalog, anchor_600_pattern="x", anchor_600_tools=["get_weather"])
    response = as_curator.post(PAGE.format(slug="default"), body)
    assert response.status_code == 200
    assert "micro_anchors: at most 500 rows" in response.content.decode()
    assert current_settings(catalog)[1] == 0
