"""An evaluation set with a repeated request is evaluated, not refused whole: each
distinct request runs once, the repeats are counted in the report, and a repeat
naming other tools adds them to the request's expected tools (API and console)."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from learning.evaluation import LabelledRequest, distinct_requests
from learning.models import Evaluation, Label
from learning.services.evaluations import run_now
from learning.tasks import run_evaluation
from tests.learning.test_evaluation import LABELS, URL, catalog  # noqa: F401

pytestmark = pytest.mark.django_db

PAGE = "/catalogs/default/evaluation/"


def with_repeats() -> list[dict[str, object]]:
    """The labels, then the first one again, and the second with another tool."""
    items: list[dict[str, object]] = [{"query": q, "tools": t} for q, t in LABELS]
    items.append({"query": LABELS[0][0], "tools": LABELS[0][1]})
    items.append({"query": f"  {LABELS[1][0]} ", "tools": ["get_forecast"]})
    return items


def test_repeats_fold_into_the_first_request_adding_the_tools_they_name():
    conversation = [{"role": "user", "content": "hi"}]
    found = distinct_requests(
        [
            LabelledRequest("weather", None, ["get_weather"]),
            LabelledRequest("", conversation, []),
            LabelledRequest("weather ", None, ["get_forecast", "get_weather"]),
            LabelledRequest("weather", None, ["get_weather"]),
            LabelledRequest("", [dict(conversation[0])], ["send_email"]),
        ]
    )
    assert [(r.query, r.tools, r.repeats, r.other_tools) for r in found] == [
        ("weather", ["get_weather", "get_forecast"], 2, 1),
        ("", ["send_email"], 1, 1),
    ]
    assert distinct_requests(found) == found


def test_the_api_evaluates_a_set_with_repeats_once_each_and_counts_them(
    as_user,
    curator,
    catalog,  # noqa: F811
):
    client = as_user(curator)
    response = client.post(URL, {"labels": with_repeats()}, format="json")
    assert response.status_code == 202, response.json()
    assert response.json()["total"] == len(LABELS)
    assert run_evaluation(response.json()["id"]) == "succeeded"
    run = Evaluation.objects.get(pk=response.json()["id"])
    assert run.metrics["requests"] == len(LABELS)
    assert run.metrics["repeats"] == 2
    assert run.metrics["repeats_with_other_tools"] == 1
    assert run.rows[0]["repeats"] == 1
    assert [e["tool"] for e in run.rows[1]["expected"]] == [
        "get_weather",
        "get_forecast",
    ]
    assert "repeats" not in run.rows[2]
    assert not Label.objects.exists()


def test_a_repeat_with_a_bad_label_still_refuses_the_set_naming_it(
    as_user,
    curator,
    catalog,  # noqa: F811
):
    items = [*with_repeats(), {"query": LABELS[0][0], "tools": ["nope"]}]
    response = as_user(curator).post(URL, {"labels": items}, format="json")
    assert response.status_code == 400
    assert f"labels[{len(items) - 1}].tools" in response.json()["fields"]
    assert not Evaluation.objects.exists()


def test_accepted_labels_of_one_request_are_evaluated_once(catalog):  # noqa: F811
    for tools in (["get_weather"], ["get_forecast"]):
        Label.objects.create(catalog=catalog, query="weather in Oslo", tools=tools)
    from learning.services.evaluations import start_evaluation

    run = run_now(start_evaluation(catalog, actor=None, enqueue=False))
    assert run.state == "succeeded"
    assert (run.metrics["requests"], run.metrics["repeats"]) == (1, 1)
    assert [e["tool"] for e in run.rows[0]["expected"]] == [
        "get_weather",
        "get_forecast",
    ]


def test_the_console_evaluates_a_label_file_with_repeats(
    as_curator,
    catalog,  # noqa: F811
):
    lines = "\n".join(json.dumps(item) for item in with_repeats())
    upload = SimpleUploadedFile("set.jsonl", lines.encode(), "application/jsonl")
    response = as_curator.post(PAGE, {"file": upload, "settings": ""})
    assert response.status_code == 302
    run = Evaluation.objects.get()
    assert (run.source, run.total) == ("inline", len(LABELS))
    run_now(run)
    page = as_curator.get(PAGE).content.decode()
    assert 'data-testid="latest-repeats"' in page
    assert "2 repeats of them counted once, 1 naming other tools" in page
    assert not Label.objects.exists()


def test_the_console_refuses_an_unreadable_label_file_naming_it(
    as_curator,
    catalog,  # noqa: F811
):
    upload = SimpleUploadedFile("set.txt", b"query,tools\n", "text/plain")
    response = as_curator.post(PAGE, {"file": upload})
    assert response.status_code == 400
    assert "file: a .jsonl or .csv file" in response.content.decode()
    assert not Evaluation.objects.exists()
