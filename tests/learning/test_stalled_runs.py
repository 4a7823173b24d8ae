"""Evaluations and learns nobody is running: one left queued (the broker lost its
message) is sent again; one whose worker died stops showing "running", ends
failed with a reason, and no longer blocks the next re-learn."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from catalog.services.catalogs import ensure_default_catalog
from learning.models import Evaluation, EvaluationState, LearnState, LearntModel
from learning.services import evaluations, learn, stalled
from learning.tasks import sweep_stalled_runs
from selection.services.settings import update_selection_settings
from tests.factories import make_tool

pytestmark = pytest.mark.django_db


@pytest.fixture
def catalog():
    found = ensure_default_catalog()
    make_tool(found, "get_weather")
    return found


def _ago(seconds: int):
    return timezone.now() - timedelta(seconds=seconds)


def _evaluation(catalog, state, **fields) -> Evaluation:
    run = Evaluation.objects.create(catalog=catalog, state=state, total=3)
    Evaluation.objects.filter(pk=run.pk).update(**fields)
    return Evaluation.objects.get(pk=run.pk)


def test_an_evaluation_left_queued_is_sent_again_and_a_fresh_one_is_not(
    catalog, sent, settings
):
    settings.QUIVER_LEARNING_RESEND_S = 60
    old = _evaluation(catalog, EvaluationState.QUEUED, created=_ago(120))
    _evaluation(catalog, EvaluationState.QUEUED)
    assert sweep_stalled_runs() == {"resent": 1, "failed": 0}
    assert sent == [(evaluations.RUN_TASK, (old.pk,))]


def test_a_learn_left_queued_is_sent_again(catalog, sent, settings):
    settings.QUIVER_LEARNING_RESEND_S = 60
    model = LearntModel.objects.create(catalog=catalog, version=1)
    LearntModel.objects.filter(pk=model.pk).update(created=_ago(120))
    assert stalled.sweep()["resent"] == 1
    assert sent == [(learn.RUN_LEARN, (model.pk,))]


def test_a_running_evaluation_whose_heartbeat_stopped_fails_with_a_reason(
    catalog, sent, settings
):
    settings.QUIVER_LEARNING_STALE_S = 900
    dead = _evaluation(
        catalog, EvaluationState.RUNNING, heartbeat=_ago(901), payload=[{"q": 1}]
    )
    alive = _evaluation(catalog, EvaluationState.RUNNING, heartbeat=_ago(30))
    assert stalled.sweep()["failed"] == 1
    dead.refresh_from_db()
    alive.refresh_from_db()
    assert dead.state == EvaluationState.FAILED
    assert "no progress for 900 s" in dead.error
    assert dead.payload is None  # inline labels never outlive their run
    assert dead.finished is not None
    assert alive.state == EvaluationState.RUNNING


def test_an_evaluation_failed_by_the_sweep_stays_failed_when_its_worker_reports_back(
    catalog, sent, settings
):
    run = evaluations.start_evaluation(
        catalog,
        actor=None,
        labels=[{"query": "weather in Oslo", "tools": ["get_weather"]}],
        enqueue=False,
    )
    claimed = evaluations.claim_evaluation(run.pk)
    assert claimed is not None and claimed.heartbeat is not None
    Evaluation.objects.filter(pk=run.pk).update(heartbeat=_ago(10_000))
    stalled.sweep()
    evaluations.run_evaluation(claimed)  # the "dead" worker finishes after all
    run.refresh_from_db()
    assert run.state == EvaluationState.FAILED
    assert run.metrics == {}


def test_a_learn_whose_worker_died_no_longer_blocks_the_next_relearn(
    catalog, sent, settings
):
    settings.QUIVER_RELEARN_ON_CHANGE = True
    done = LearntModel.objects.create(
        catalog=catalog, version=1, state=LearnState.SUCCEEDED
    )
    update_selection_settings(catalog, {"learnt_model": done.pk}, actor=None)
    dead = LearntModel.objects.create(
        catalog=catalog, version=2, state=LearnState.RUNNING, heartbeat=_ago(10_000)
    )
    assert learn.relearn_on_change(catalog) is None  # "a learn is running"
    stalled.sweep()
    dead.refresh_from_db()
    assert dead.state == LearnState.FAILED and "start it again" in dead.error
    queued = learn.relearn_on_change(catalog)
    assert queued is not None and queued.version == 3


def test_claiming_a_learn_sets_its_heartbeat(catalog):
    model = LearntModel.objects.create(catalog=catalog, version=1)
    claimed = learn.claim(model.pk)
    assert claimed is not None and claimed.heartbeat is not None
    assert learn.claim(model.pk) is None  # exactly one claim
