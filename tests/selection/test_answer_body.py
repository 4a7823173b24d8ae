"""A /select answer's body is built directly (selection.api.serializers.answer_body),
and it is exactly what SelectOutputSerializer's declared fields render: the same
keys in the same order, the same values of the same types, ``excluded`` only when
the request asked to explain."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

import pytest
from rest_framework import serializers

from selection.answers import AnsweredTool, SelectionAnswer
from selection.api.serializers import SelectOutputSerializer, answer_body
from selection.engine.types import Exclusion, SelectionRequest
from selection.services.select import select_tools
from tests.factories import make_sample_catalog


def typed(value: Any) -> Any:
    if isinstance(value, dict):
        return [(key, typed(item)) for key, item in value.items()]  # order counts
    if isinstance(value, list | tuple):
        return [typed(item) for item in value]
    return (type(value).__name__, value)


def by_the_fields(answer: SelectionAnswer) -> dict[str, Any]:
    """The body DRF's generic rendering of the declared fields gives."""
    rendered = dict(
        serializers.Serializer.to_representation(SelectOutputSerializer(), answer)
    )
    if rendered.get("excluded") is None:
        rendered.pop("excluded")
    return rendered


def an_answer(**changes: Any) -> SelectionAnswer:
    pick = AnsweredTool(
        name="get_weather",
        score=1,  # an int where the field renders a float
        reason="matches 'weather'",
        signals={"bm25f": 0.7, "semantic": 1, "gone": None},  # type: ignore[dict-item]
        requires_approval=True,
        core=False,
        exploration=True,
        definition={"type": "function", "function": {"name": "get_weather"}},
    )
    answer = SelectionAnswer(
        catalog="default",
        catalog_version=7,
        settings_version=0,
        scorer="hybrid",
        tools=(pick, replace(pick, name="other", signals={})),
        stats={"considered": 3, "timings_ms": {"total": 5.0}, "account": {}},
        cached=True,
        degraded=False,
        excluded=(
            Exclusion("delete_repo", "policy", "unsafe", "unsafe tools are off"),
            Exclusion("send_email", "rank", "cut", "ranked 4th of 3", 0.12),
        ),
        selection_id=str(uuid.uuid4()),
        request_id=None,
    )
    return replace(answer, **changes)


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"excluded": None},
        {"excluded": ()},
        {"tools": (), "no_tool": {"reason": "below_min_score", "best_score": 0.01}},
        {"request_id": str(uuid.uuid4()), "degraded": True, "fallback_reason": "x"},
        {"stats": {}},
    ],
)
def test_the_body_is_what_the_declared_fields_render(changes):
    answer = an_answer(**changes)
    assert typed(answer_body(answer)) == typed(by_the_fields(answer))


def test_the_serializer_renders_the_same_body():
    answer = an_answer()
    assert typed(dict(SelectOutputSerializer(answer).data)) == typed(
        answer_body(answer)
    )


@pytest.mark.django_db
def test_real_answers_render_as_the_fields_do(admin_user):
    catalog = make_sample_catalog()
    for query, options in (
        ("weather in Paris", {}),
        ("weather in Paris", {"explain": True}),
        ("zzzz qqqq", {"min_score": 0.99, "explain": True}),
    ):
        request = SelectionRequest(query=query, **options)
        for fmt in ("canonical", "openai", "mcp"):
            answer = select_tools(catalog, request, fmt=fmt, actor=admin_user)
            assert typed(answer_body(answer)) == typed(by_the_fields(answer))


def test_a_shared_definition_is_not_the_bodys_own_dict():
    answer = an_answer()
    body = answer_body(answer)
    assert body["tools"][0]["definition"] == answer.tools[0].definition
    assert body["tools"][0]["definition"] is not answer.tools[0].definition
