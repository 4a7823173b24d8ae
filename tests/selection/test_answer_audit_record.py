"""A selection's audit record: everything the answer holds but the definitions,
with each pick's version and hash and every exclusion the engine named."""

from __future__ import annotations

import json
from dataclasses import asdict

from selection.answers import AnsweredTool, SelectionAnswer
from selection.engine.types import Exclusion


def an_answer() -> SelectionAnswer:
    pick = AnsweredTool(
        name="get_weather",
        score=0.81,
        reason="matches 'weather'",
        signals={"bm25f": 0.7, "semantic": 0.9},
        requires_approval=False,
        core=False,
        exploration=False,
        definition={"type": "function", "function": {"name": "get_weather"}},
    )
    named = (
        Exclusion("delete_repo", "policy", "unsafe", "unsafe tools are off", None),
        Exclusion("send_email", "rank", "cut", "ranked 4th of 3", 0.12),
    )
    return SelectionAnswer(
        catalog="default",
        catalog_version=7,
        settings_version=2,
        scorer="hybrid",
        tools=(pick,),
        stats={"considered": 3, "timings_ms": {"total": 5.0}},
        cached=False,
        degraded=False,
        excluded=named[:1],
        selection_id="a1",
        request_id="r1",
        audit_exclusions=named,
    )


def as_before(answer: SelectionAnswer, versions: dict) -> dict:
    """The record as ``asdict`` built it (the reference)."""
    record = asdict(answer)
    record["tools"] = [
        {
            **{k: v for k, v in tool.items() if k != "definition"},
            **versions.get(tool["name"], {}),
        }
        for tool in record["tools"]
    ]
    record["excluded"] = record.pop("audit_exclusions")
    return record


def stored(record: dict) -> str:
    return json.dumps(record, sort_keys=True)


def test_the_record_is_the_answer_without_definitions_with_versions():
    versions = {"get_weather": {"version": 3, "content_hash": "abc"}}
    record = an_answer().audit_record(versions)
    assert "definition" not in record["tools"][0]
    assert record["tools"][0]["version"] == 3
    assert record["tools"][0]["content_hash"] == "abc"
    assert [e["name"] for e in record["excluded"]] == ["delete_repo", "send_email"]
    assert "audit_exclusions" not in record


def test_the_record_stores_exactly_what_the_deep_copy_stored():
    versions = {"get_weather": {"version": 3, "content_hash": "abc"}}
    answer = an_answer()
    assert stored(answer.audit_record(versions)) == stored(as_before(answer, versions))
