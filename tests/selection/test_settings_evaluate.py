"""Before saving, the settings page also runs the catalog's labelled requests (its
evaluation set) under the saved and the proposed settings: two evaluation runs,
compared side by side on the Evaluation page; the settings stay as they were."""

from __future__ import annotations

from typing import Any

import pytest

from catalog.services.catalogs import ensure_default_catalog
from learning.models import Evaluation, Label
from selection.models import SelectionSettings
from selection.services.settings import current_settings
from tests.factories import make_tool
from tests.selection.test_settings_form import form_post

pytestmark = pytest.mark.django_db

EVALUATE = "/catalogs/{slug}/selection-settings/evaluate/"
HTMX = {"HX-Request": "true"}


@pytest.fixture
def catalog(db) -> Any:
    catalog = ensure_default_catalog()
    make_tool(catalog, "refund_payment", description="Refund a customer's payment.")
    make_tool(catalog, "send_email", description="Send an email to a customer.")
    return catalog


def labelled(catalog: Any) -> None:
    Label.objects.create(catalog=catalog, query="refund it", tools=["refund_payment"])
    Label.objects.create(catalog=catalog, query="mail them", tools=["send_email"])


def evaluate(client: Any, catalog: Any, **changes: Any) -> Any:
    body = form_post(catalog, **changes)
    return client.post(EVALUATE.format(slug=catalog.slug), body, headers=HTMX)


def test_two_runs_start_one_saved_and_one_with_the_proposed_settings(
    as_curator, catalog
):
    labelled(catalog)
    before = current_settings(catalog)
    response = evaluate(as_curator, catalog, core_tools=["send_email"])
    assert response.status_code == 200, response.content[:300]
    saved, tried = Evaluation.objects.filter(catalog=catalog).order_by("id")
    assert saved.settings_data is None
    assert tried.settings_data["core_tools"] == ["send_email"]
    assert saved.total == tried.total == 2
    html = response.content.decode()
    assert f"?a={saved.pk}&amp;b={tried.pk}" in html
    assert current_settings(catalog) == before
    assert not SelectionSettings.objects.filter(catalog=catalog, version__gt=1).exists()


def test_without_labelled_requests_nothing_is_evaluated_and_the_page_says_why(
    as_curator, catalog
):
    response = evaluate(as_curator, catalog)
    assert response.status_code == 200
    assert 'data-testid="evaluate-settings-errors"' in response.content.decode()
    assert not Evaluation.objects.exists()


def test_proposed_settings_out_of_range_are_named_and_nothing_runs(as_curator, catalog):
    labelled(catalog)
    response = evaluate(as_curator, catalog, candidate_pool="0")
    assert "candidate_pool" in response.content.decode()
    assert not Evaluation.objects.exists()


@pytest.mark.parametrize("who", ["as_compliance", "as_member"])
def test_only_those_who_manage_the_catalogs_labels_may_evaluate(request, who, catalog):
    labelled(catalog)
    response = evaluate(request.getfixturevalue(who), catalog)
    assert response.status_code == 403
    assert not Evaluation.objects.exists()
