"""QUIVER_RELEARN_ON_CHANGE: a tool edit in a catalog sends the re-learn task,
which queues one applied learn of a catalog whose settings apply a learnt model,
and none while one is already waiting (the queue is the debounce)."""

from __future__ import annotations

import pytest

from catalog.services.catalogs import ensure_default_catalog
from learning.models import LearnState, LearntModel
from learning.services import labels, learn
from selection.services.settings import update_selection_settings
from tests.factories import make_tool

pytestmark = pytest.mark.django_db
ADMIN = None  # a system change (a command), which sees every tool


def test_a_tool_edit_sends_the_relearn_task_when_the_setting_is_on(
    settings, sent, django_capture_on_commit_callbacks
):
    settings.QUIVER_RELEARN_ON_CHANGE = True
    with django_capture_on_commit_callbacks(execute=True):
        tool = make_tool(ensure_default_catalog(), "get_weather")
    assert ("learning.learn_tasks.relearn_if_due", (tool.catalog_id,)) in sent


def test_no_relearn_task_when_the_setting_is_off(
    settings, sent, django_capture_on_commit_callbacks
):
    settings.QUIVER_RELEARN_ON_CHANGE = False
    with django_capture_on_commit_callbacks(execute=True):
        make_tool(ensure_default_catalog(), "get_weather")
    assert not [name for name, _ in sent if "relearn" in name]


def test_a_catalog_with_an_applied_model_is_relearnt_once(settings, sent):
    settings.QUIVER_RELEARN_ON_CHANGE = True
    catalog = ensure_default_catalog()
    make_tool(catalog, "get_weather")
    assert learn.relearn_on_change(catalog) is None  # nothing applied yet
    done = LearntModel.objects.create(
        catalog=catalog, version=1, state=LearnState.SUCCEEDED
    )
    update_selection_settings(catalog, {"learnt_model": done.pk}, actor=None)
    queued = learn.relearn_on_change(catalog)
    assert queued is not None and queued.apply and queued.version == 2
    assert learn.relearn_on_change(catalog) is None


def _relearns(sent) -> list[tuple]:
    return [
        args for name, args in sent if name == "learning.learn_tasks.relearn_if_due"
    ]


@pytest.fixture
def weather(settings, sent):
    """The default catalog with get_weather, re-learning on change, and no task
    sent yet."""
    settings.QUIVER_RELEARN_ON_CHANGE = True
    catalog = ensure_default_catalog()
    make_tool(catalog, "get_weather")
    sent.clear()
    return catalog


def test_a_label_upload_that_adds_labels_sends_the_relearn_task(
    weather, sent, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        labels.add_labels(
            weather,
            [{"query": "weather in Oslo", "tools": ["get_weather"]}],
            actor=ADMIN,
        )
    assert _relearns(sent) == [(weather.pk,)]


def test_an_upload_that_adds_nothing_and_a_proposal_send_no_relearn(
    weather, sent, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        labels.add_labels(
            weather, [{"query": "x", "tools": ["no_such_tool"]}], actor=ADMIN
        )
        labels.record_labels_changed(
            weather, "propose", ADMIN, None, {}, {"proposed": 3}
        )
    assert _relearns(sent) == []


def test_deleting_labels_sends_the_relearn_task_and_none_when_the_setting_is_off(
    settings, sent, django_capture_on_commit_callbacks
):
    catalog = ensure_default_catalog()
    make_tool(catalog, "get_weather")
    labels.add_labels(
        catalog, [{"query": "weather in Oslo", "tools": ["get_weather"]}], actor=ADMIN
    )
    settings.QUIVER_RELEARN_ON_CHANGE = False
    sent.clear()
    with django_capture_on_commit_callbacks(execute=True):
        labels.delete_labels(catalog, actor=ADMIN)
    assert _relearns(sent) == []
    labels.add_labels(
        catalog, [{"query": "rain in Bergen", "tools": ["get_weather"]}], actor=ADMIN
    )
    settings.QUIVER_RELEARN_ON_CHANGE = True
    with django_capture_on_commit_callbacks(execute=True):
        assert labels.delete_labels(catalog, actor=ADMIN) == 1
    assert _relearns(sent) == [(catalog.pk,)]
