"""What learning lends selection at start-up (selection.registry), and what identity
asks of the catalog (identity.catalogs): registered by the apps' ``ready``, and
failing closed when nothing is registered."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured, ValidationError

from catalog.services import ensure_default_catalog
from identity import catalogs as identity_catalogs
from identity.services.clients import create_api_client
from learning.gate import check_change
from learning.services.evaluations import evaluate_pair
from learning.signal import signal_for
from selection import registry
from selection.models import SelectionSettings
from selection.services.settings import update_selection_settings

pytestmark = pytest.mark.django_db


def test_learning_lends_its_signal_gate_and_evaluation_at_start_up():
    lent = registry._learning()
    assert lent.signal is signal_for
    assert lent.gate is check_change
    assert lent.evaluate is evaluate_pair


def test_a_settings_change_without_a_registered_gate_is_refused_and_not_saved(
    monkeypatch,
):
    catalog = ensure_default_catalog()
    monkeypatch.setattr(registry, "_lent", [])
    with pytest.raises(ImproperlyConfigured, match="learning is not registered"):
        update_selection_settings(catalog, {"default_scorer": "bm25f"}, actor=None)
    assert not SelectionSettings.objects.filter(catalog=catalog).exists()


def test_a_snapshot_cannot_read_a_learnt_signal_nobody_registered(monkeypatch):
    monkeypatch.setattr(registry, "_lent", [])
    with pytest.raises(ImproperlyConfigured):
        registry.learnt_signal(ensure_default_catalog(), None)


def test_the_catalog_tells_identity_which_slugs_are_catalogs():
    ensure_default_catalog()
    assert identity_catalogs.existing_catalogs(["default", "nope"]) == {"default"}
    with pytest.raises(ValidationError, match="unknown catalog 'nope'"):
        create_api_client("k", "agent", catalogs=["nope"])


def test_a_key_limited_to_catalogs_cannot_be_made_when_nobody_answers(monkeypatch):
    ensure_default_catalog()
    monkeypatch.setattr(identity_catalogs, "_existing", [])
    with pytest.raises(ImproperlyConfigured, match="no catalog names registered"):
        create_api_client("k", "agent", catalogs=["default"])
