"""docs/tutorials/learn-from-labels.md, run as written on make run's demo catalog
with static/learning/demo-labels.jsonl: upload, evaluate, learn, apply, ask
again; each answer as the page shows it (its numbers depend on the ranking, so
the page leaves them out)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from learning.learn_tasks import run_learn
from learning.models import LearntModel
from learning.tasks import run_evaluation
from tests.demo import embed_demo, load_demo_catalog
from tests.docs.shown import as_printed, check_shown

pytestmark = pytest.mark.django_db
PAGE = "docs/tutorials/learn-from-labels.md"
LABELS = Path(__file__).resolve().parents[2] / "static/learning/demo-labels.jsonl"
API = "/api/v1/catalogs/default"


def demo_labels() -> list[dict]:
    return [json.loads(line) for line in LABELS.read_text().splitlines()]


def test_the_tutorial_learns_from_the_demo_labels_as_it_shows(
    tmp_path, monkeypatch, with_key
):
    embed_demo(load_demo_catalog(tmp_path, monkeypatch))
    curator = with_key("curator", "tuner")
    first_two = [
        {"query": "what's inside the Q3 folder on the drive", "tools": ["list_files"]},
        {"query": "tell me a joke about penguins", "tools": []},
    ]
    added = curator.post(f"{API}/labels", {"labels": first_two}, format="json")
    rest = [label for label in demo_labels() if label not in first_two]
    assert (
        curator.post(f"{API}/labels", {"labels": rest}, format="json").status_code
        == 201
    )

    queued = curator.post(f"{API}/evaluations", {}, format="json")
    run_evaluation(queued.json()["id"])
    evaluated = curator.get(f"{API}/evaluations/{queued.json()['id']}?misses=true")
    learning = curator.post(f"{API}/learn", {}, format="json")
    version = learning.json()["version"]
    run_learn(LearntModel.objects.get(catalog__slug="default", version=version).pk)
    learnt = curator.get(f"{API}/learn/{version}")
    applied = curator.post(f"{API}/learn/{version}/apply", {}, format="json")
    agent = with_key("agent", "my-agent", roles=["support"])
    joke = agent.post(
        "/api/v1/select", {"query": "tell me a joke about penguins"}, format="json"
    )

    assert (added.status_code, queued.status_code) == (201, 202)
    assert (learning.status_code, applied.status_code) == (202, 200)
    for name, answer in (
        ("labels-added", added),
        ("labels-evaluated", evaluated),
        ("labels-learnt", learnt),
        ("labels-applied", applied),
        ("labels-joke", joke),
    ):
        check_shown(PAGE, name, as_printed(answer.json()))
