"""The regression gate: a settings change that lowers a labelled catalog's
cross-validated NDCG@10 by more than 0.01 is refused (409 naming the rule and the
delta) unless the curator accepts the regression with a reason, which the
settings' audit event records; a catalog without labels has no gate."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from catalog.services.catalogs import ensure_default_catalog
from learning.gate import check_change
from learning.models import Label, LabelStatus
from selection.models import SelectionSettings
from selection.registry import RegressionRefused
from selection.services.settings import update_selection_settings
from tests.factories import make_tool

pytestmark = pytest.mark.django_db

API = "/api/v1/catalogs/default/selection-settings"
# Only tags count, and no tool has tags: every label loses its tool.
HARMFUL = {"hybrid_weights": {"tag": 1.0, "embed": 0, "lexical": 0, "bm25f": 0,
                              "name": 0}}  # fmt: skip
HARMLESS = {"candidate_pool": 60}


@pytest.fixture
def labelled(db):
    catalog = ensure_default_catalog()
    make_tool(catalog, "get_weather", description="Current weather for a city.")
    make_tool(catalog, "send_email", description="Send an email to a person.")
    make_tool(catalog, "convert_currency", description="Convert money between "
              "currencies at today's rate.")  # fmt: skip
    for query, tool in [
        ("what is the weather in Paris", "get_weather"),
        ("weather for Berlin tomorrow", "get_weather"),
        ("send an email to Bob", "send_email"),
        ("email my manager the report", "send_email"),
        ("convert 20 dollars to euros", "convert_currency"),
        ("how much is 5 pounds in yen currency", "convert_currency"),
    ]:
        Label.objects.create(
            catalog=catalog, query=query, tools=[tool], status=LabelStatus.ACCEPTED
        )
    return catalog


def test_a_change_that_lowers_the_labelled_ndcg_is_refused(labelled, as_user, curator):
    response = as_user(curator).put(API, {"settings": HARMFUL}, format="json")
    assert response.status_code == 409
    body = response.json()
    assert "regression gate" in body["detail"]
    assert body["delta"] < -0.01
    assert body["ndcg_before"] > body["ndcg_after"]
    assert not SelectionSettings.objects.filter(catalog=labelled).exists()
    assert not AuditEvent.objects.filter(event_type="settings").exists()


def test_a_regression_accepted_with_a_reason_is_saved_and_audited(
    labelled, as_user, curator
):
    response = as_user(curator).put(
        API,
        {"settings": HARMFUL, "accept_regression": "tags are coming next week"},
        format="json",
    )
    assert response.status_code == 200, response.json()
    event = AuditEvent.objects.get(event_type="settings")
    gate = event.input["gate"]
    assert gate["accepted_regression"] == "tags are coming next week"
    assert gate["delta"] < -0.01


def test_a_blank_reason_does_not_accept_a_regression(labelled):
    with pytest.raises(RegressionRefused):
        check_change(labelled, HARMFUL, accept_regression_reason="   ")


def test_a_change_that_keeps_the_ndcg_passes_and_is_audited_with_its_numbers(
    labelled, as_user, curator
):
    response = as_user(curator).put(API, {"settings": HARMLESS}, format="json")
    assert response.status_code == 200
    gate = AuditEvent.objects.get(event_type="settings").input["gate"]
    assert abs(gate["delta"]) <= 0.01
    assert gate["labels"] == 6


def test_a_catalog_without_labels_has_no_gate(db):
    catalog = ensure_default_catalog()
    make_tool(catalog, "get_weather")
    assert check_change(catalog, HARMFUL) is None
    update_selection_settings(catalog, HARMFUL, actor=None)
    assert SelectionSettings.objects.get(catalog=catalog).data == HARMFUL


def test_proposed_and_rejected_labels_do_not_count(labelled):
    Label.objects.update(status=LabelStatus.PROPOSED)
    assert check_change(labelled, HARMFUL) is None
