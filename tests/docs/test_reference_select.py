"""docs/reference/selection.md's example answer is what /select answers for that
request on make run's demo catalog, embedded (ids and times left out)."""

from __future__ import annotations

import json

import pytest

from tests.demo import embed_demo, load_demo_catalog
from tests.docs.shown import check_shown

pytestmark = pytest.mark.django_db


def test_the_reference_s_example_answer_is_what_select_answers(
    with_key, tmp_path, monkeypatch
):
    embed_demo(load_demo_catalog(tmp_path, monkeypatch))
    agent = with_key("agent", "my-agent", roles=["support"])

    answer = agent.post(
        "/api/v1/select",
        {
            "query": "open the meeting notes file",
            "max_candidates": 2,
            "format": "openai",
        },
        format="json",
    )

    assert answer.status_code == 200, answer.json()
    printed = json.dumps(answer.json(), indent=2, ensure_ascii=False)
    check_shown("docs/reference/selection.md", "select-example", printed)
