"""One caller cannot queue unbounded work: at most QUIVER_LEARNING_RUNS_PER_CALLER
evaluations and learns queued or running per caller (across catalogs) and
QUIVER_LEARNING_RUNS_PER_CATALOG per catalog; past either a 429 naming the limit,
with Retry-After, and nothing queued (learning.services.limits)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection
from rest_framework.test import APIClient

from catalog.services import create_catalog
from catalog.services.catalogs import ensure_default_catalog
from config.exceptions import LimitReached
from learning.models import (
    Evaluation,
    EvaluationState,
    Label,
    LabelStatus,
    LearnState,
    LearntModel,
)
from learning.services import evaluations, learn
from tests.factories import make_client_key, make_tool, make_user
from tests.selection.test_settings_form import form_post

EVALUATIONS = "/api/v1/catalogs/{slug}/evaluations"
LEARN = "/api/v1/catalogs/{slug}/learn"


def labelled(slug: str) -> Any:
    catalog = (
        ensure_default_catalog()
        if slug == "default"
        else create_catalog(slug, slug.title(), "", actor=None)
    )
    make_tool(catalog, "get_weather", description="Current weather for a city.")
    Label.objects.create(
        catalog=catalog, query="weather in Paris", tools=["get_weather"],
        status=LabelStatus.ACCEPTED,
    )  # fmt: skip
    return catalog


@pytest.fixture
def catalog(db: None) -> Any:
    return labelled("default")


def curator_key(name: str) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {make_client_key(name, 'curator')}")
    return api


def runs() -> int:
    return Evaluation.objects.count() + LearntModel.objects.count()


@pytest.mark.django_db
def test_a_key_queues_two_runs_then_gets_a_429_naming_the_limit(catalog):
    api = curator_key("busy-bot")
    url = EVALUATIONS.format(slug="default")
    assert api.post(url, {}, format="json").status_code == 202
    assert api.post(LEARN.format(slug="default"), {}, format="json").status_code == 202

    for refused in (
        api.post(url, {}, format="json"),
        api.post(LEARN.format(slug="default"), {}, format="json"),
    ):
        assert refused.status_code == 429
        body = refused.json()
        assert body["error"] == "limit_reached"
        assert "QUIVER_LEARNING_RUNS_PER_CALLER=2" in body["detail"]
        assert body["fields"] == {"runs": [body["detail"]]}
        assert body["retryable"] is True
        assert int(refused["Retry-After"]) > 0
    assert runs() == 2


@pytest.mark.django_db
def test_the_callers_limit_holds_across_catalogs(catalog):
    labelled("other")
    api = curator_key("busy-bot")
    for slug in ("default", "other"):
        assert (
            api.post(EVALUATIONS.format(slug=slug), {}, format="json").status_code
            == 202
        )

    answer = api.post(EVALUATIONS.format(slug="other"), {}, format="json")

    assert answer.status_code == 429


@pytest.mark.django_db
def test_a_catalog_takes_three_whoever_asks(catalog):
    labelled("other")
    first, second = curator_key("first-bot"), curator_key("second-bot")
    url = EVALUATIONS.format(slug="default")
    for api in (first, first, second):
        assert api.post(url, {}, format="json").status_code == 202

    refused = second.post(url, {}, format="json")
    elsewhere = second.post(EVALUATIONS.format(slug="other"), {}, format="json")

    assert refused.status_code == 429
    assert "QUIVER_LEARNING_RUNS_PER_CATALOG=3" in refused.json()["detail"]
    assert "'default'" in refused.json()["detail"]
    assert elsewhere.status_code == 202


@pytest.mark.django_db
@pytest.mark.parametrize("state", ["succeeded", "failed"])
def test_a_finished_run_frees_its_slot(catalog, state):
    person = make_user("carla", groups=("curator",))
    for _ in range(2):
        evaluations.start_evaluation(catalog, actor=person, enqueue=False)
    with pytest.raises(LimitReached):
        learn.request_learn(catalog, actor=person, apply=False)

    Evaluation.objects.filter(pk=Evaluation.objects.first().pk).update(state=state)

    assert learn.request_learn(catalog, actor=person, apply=False).pk


@pytest.mark.django_db
def test_running_runs_count_as_much_as_queued_ones(catalog):
    person = make_user("carla", groups=("curator",))
    Evaluation.objects.create(
        catalog=catalog, created_by=person, state=EvaluationState.RUNNING
    )
    LearntModel.objects.create(
        catalog=catalog, version=1, created_by=person, state=LearnState.RUNNING
    )

    with pytest.raises(LimitReached, match="RUNS_PER_CALLER"):
        evaluations.start_evaluation(catalog, actor=person, enqueue=False)


@pytest.mark.django_db
def test_the_console_refuses_with_a_429_naming_the_limit(catalog, client, settings):
    settings.QUIVER_LEARNING_RUNS_PER_CALLER = 1
    person = make_user("carla", groups=("curator",))
    client.force_login(person)
    url = "/catalogs/default/evaluation/"

    assert client.post(url, {"settings": ""}).status_code == 302
    answer = client.post(url, {"settings": ""})

    assert answer.status_code == 429
    assert "QUIVER_LEARNING_RUNS_PER_CALLER=1" in answer.content.decode()
    assert answer["Retry-After"]
    assert Evaluation.objects.count() == 1


@pytest.mark.django_db
def test_a_relearn_the_system_queues_is_never_refused(catalog):
    for name in ("first", "second", "third"):
        person = make_user(name, groups=("curator",))
        evaluations.start_evaluation(catalog, actor=person, enqueue=False)

    model = learn.request_learn(catalog, actor=None, apply=True)

    assert model.state == LearnState.QUEUED


@pytest.mark.django_db(transaction=True)
def test_two_requests_at_once_never_both_take_the_last_slot(settings):
    settings.QUIVER_LEARNING_RUNS_PER_CALLER = 1
    catalog = labelled("default")
    person = make_user("carla", groups=("curator",))
    start = threading.Barrier(2)
    outcomes: list[str] = []

    def queue_one() -> None:
        try:
            start.wait(timeout=30)
            evaluations.start_evaluation(catalog, actor=person, enqueue=False)
            outcomes.append("queued")
        except LimitReached:
            outcomes.append("refused")
        finally:
            connection.close()

    threads = [threading.Thread(target=queue_one) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert sorted(outcomes) == ["queued", "refused"]
    assert Evaluation.objects.count() == 1


@pytest.mark.django_db
def test_the_settings_page_starts_both_runs_or_neither(catalog, client):
    person = make_user("carla", groups=("curator",))
    evaluations.start_evaluation(catalog, actor=person, enqueue=False)
    client.force_login(person)
    url = "/catalogs/default/selection-settings/evaluate/"

    answer = client.post(url, form_post(catalog), headers={"HX-Request": "true"})
    whole = client.post(url, form_post(catalog))

    assert answer.status_code == 200  # htmx swaps 2xx only; the fragment says why
    assert "QUIVER_LEARNING_RUNS_PER_CALLER=2" in answer.content.decode()
    assert whole.status_code == 429
    assert Evaluation.objects.count() == 1
