"""POST /api/v1/catalogs/{slug}/learn: curators of the catalog queue a learn of
its accepted labels (agents never, compliance only reads, a catalog the caller
cannot see is a 404); the job fits on folds of the labels and proposes, and
applying is an audited settings change after which /select uses what was learnt
(the pick's reason names it)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from audit.models import AuditEvent
from catalog.services import create_catalog
from catalog.services.catalogs import ensure_default_catalog
from learning.models import Label, LabelStatus, LearnState, LearntModel
from learning.services import learn
from selection.models import SelectionSettings
from tests.factories import make_client_key, make_tool

pytestmark = pytest.mark.django_db

LEARN = "/api/v1/catalogs/{slug}/learn"
# The catalog's users say "zorp N blargs" for converting currencies.
JARGON = ["zorp 20 blargs", "zorp my blargs", "please zorp these blargs",
          "zorp blargs to euros", "how many blargs if I zorp"]  # fmt: skip
WEATHER = ["weather in Paris", "is it raining in Rome", "weather tomorrow Oslo",
           "forecast for Lima weather", "weather report Cairo"]  # fmt: skip


@pytest.fixture
def catalog(db):
    found = ensure_default_catalog()
    make_tool(found, "get_weather", description="Current weather for a city.")
    make_tool(found, "convert_currency", description="Convert money amounts.")
    make_tool(found, "send_email", description="Send an email to a person.")
    rows = [(q, "convert_currency") for q in JARGON] + [
        (q, "get_weather") for q in WEATHER
    ]
    for query, tool in rows:
        Label.objects.create(
            catalog=found, query=query, tools=[tool], status=LabelStatus.ACCEPTED
        )
    return found


def key(scope: str, **options) -> APIClient:
    api = APIClient()
    api.credentials(
        HTTP_AUTHORIZATION=f"Bearer {make_client_key(scope, scope, **options)}"
    )
    return api


def test_a_curator_queues_a_learn(catalog, as_user, curator):
    response = as_user(curator).post(LEARN.format(slug="default"), {}, format="json")
    assert response.status_code == 202
    body = response.json()
    assert body["state"] == "queued" and body["version"] == 1
    assert body["url"].endswith("/learn/1")
    assert LearntModel.objects.get(catalog=catalog).apply is False


@pytest.mark.parametrize("scope", ["agent", "compliance"])
def test_agents_and_compliance_may_not_learn(catalog, scope):
    response = key(scope).post(LEARN.format(slug="default"), {}, format="json")
    assert response.status_code == 403
    assert not LearntModel.objects.exists()


def test_an_agent_may_not_read_a_learn(catalog):
    learn.request_learn(catalog, actor=None, apply=False)
    response = key("agent").get(LEARN.format(slug="default") + "/1")
    assert response.status_code == 403


def test_a_curator_of_other_catalogs_does_not_see_this_one(catalog):
    create_catalog("other", "Other")
    api = key("curator", catalogs=["other"])
    response = api.post(LEARN.format(slug="default"), {}, format="json")
    assert response.status_code == 404
    assert not LearntModel.objects.exists()


def test_an_unknown_field_is_named(catalog, as_user, curator):
    response = as_user(curator).post(
        LEARN.format(slug="default"), {"aply": True}, format="json"
    )
    assert response.status_code == 400
    assert "aply" in response.content.decode()


def run(model: LearntModel) -> LearntModel:
    claimed = learn.claim(model.pk)
    assert claimed is not None
    assert learn.claim(model.pk) is None  # exactly one worker gets it
    return learn.run_learn(claimed)


def test_a_learn_proposes_settings_with_its_cross_validated_delta(catalog):
    model = run(learn.request_learn(catalog, actor=None, apply=False))
    assert model.state == LearnState.SUCCEEDED, model.error
    assert model.cv["delta"] > 0
    assert model.cv["ndcg_after"] > model.cv["ndcg_before"]
    assert model.proposed_settings["learnt_model"] == model.pk
    assert not SelectionSettings.objects.filter(catalog=catalog).exists()


def test_applying_a_learn_is_an_audited_settings_change_select_then_uses(
    catalog, as_user, curator
):
    before = as_user(curator).post(
        "/api/v1/select", {"query": "zorp 7 blargs", "min_score": 0}, format="json"
    )
    assert "convert_currency" not in [t["name"] for t in before.json()["tools"]]
    model = run(learn.request_learn(catalog, actor=curator, apply=True))
    model.refresh_from_db()
    assert model.applied_settings_version == 1
    event = AuditEvent.objects.get(event_type="settings")
    assert event.input["learnt_model"] == model.pk
    assert event.input["gate"]["delta"] >= 0
    after = as_user(curator).post(
        "/api/v1/select", {"query": "zorp 7 blargs", "min_score": 0}, format="json"
    )
    top = after.json()["tools"][0]
    assert top["name"] == "convert_currency"
    assert "learnt" in top["reason"].lower()


def test_a_learn_on_labels_that_do_not_help_proposes_no_change(db):
    found = ensure_default_catalog()
    make_tool(found, "get_weather", description="Current weather for a city.")
    make_tool(found, "send_email", description="Send an email to a person.")
    for query in WEATHER * 2:
        Label.objects.create(catalog=found, query=query, tools=["get_weather"])
    model = run(learn.request_learn(found, actor=None, apply=True))
    assert model.state == LearnState.SUCCEEDED
    assert model.proposed_settings is None
    assert not AuditEvent.objects.filter(event_type="settings").exists()


@pytest.mark.parametrize("version", [0, 2**31, 2**70])
def test_a_learn_number_out_of_range_is_a_404(catalog, as_user, curator, version):
    response = as_user(curator).get(LEARN.format(slug="default") + f"/{version}")
    assert response.status_code == 404


def test_applying_a_learn_that_proposes_nothing_is_a_400(db, as_user, curator):
    found = ensure_default_catalog()
    make_tool(found, "get_weather", description="Current weather for a city.")
    model = learn.request_learn(found, actor=None, apply=False)
    response = as_user(curator).post(LEARN.format(slug="default") + "/1/apply")
    assert response.status_code == 400
    assert "apply" in response.content.decode()
    assert model.pk


def test_the_why_not_of_a_recorded_selection_names_the_learnt_signal(
    catalog, as_user, curator
):
    from selection.services.why_not import why_not

    run(learn.request_learn(catalog, actor=curator, apply=True))
    answer = as_user(curator).post(
        "/api/v1/select",
        {"query": "zorp 9 blargs", "min_score": 0, "max_candidates": 1},
        format="json",
    )
    event = AuditEvent.objects.get(selection_id=answer.json()["selection_id"])
    picked = why_not(event, "convert_currency")
    assert picked.outcome == "picked"
    assert "learnt" in picked.detail.lower()
