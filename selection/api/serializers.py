"""Input and output of POST /api/v1/select (validation only; no decisions)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from catalog.api.serializers import check_stored_size
from catalog.formats import FORMATS
from catalog.sizes import MAX_STORED_CHARS, MAX_TOOL_CHARS, size_problem
from config.strict import StrictFieldsMixin
from selection.engine import SCORERS
from selection.engine.types import MAX_CANDIDATES_LIMIT
from selection.services.settings import version_changes
from selection.toolcalls.parse import CALL_FORMATS

MAX_BATCH = 100
# A batch is stored as one audit row per request, each held to MAX_STORED_CHARS
# by SelectInputSerializer; the batch as a whole to this (all its requests).
MAX_BATCH_CHARS = MAX_BATCH * MAX_STORED_CHARS


def _names() -> serializers.ListField:
    return serializers.ListField(
        child=serializers.CharField(max_length=200), required=False, max_length=1000
    )


class SelectInputSerializer(StrictFieldsMixin, serializers.Serializer):
    catalog = serializers.SlugField(default="default")
    query = serializers.JSONField(required=False)
    messages = serializers.ListField(
        child=serializers.DictField(), required=False, max_length=500
    )
    max_candidates = serializers.IntegerField(
        default=3, min_value=1, max_value=MAX_CANDIDATES_LIMIT
    )
    min_score = serializers.FloatField(default=0.05, min_value=0.0, max_value=1.0)
    scorer = serializers.ChoiceField(choices=SCORERS, required=False)
    allow_unsafe = serializers.BooleanField(default=False)
    roles = _names()
    categories = _names()
    allow_tools = _names()
    block_tools = _names()
    max_cost_per_call = serializers.FloatField(required=False, min_value=0.0)
    max_total_tokens = serializers.IntegerField(required=False, min_value=0)
    require_capabilities = _names()
    recent_tools = _names()
    format = serializers.ChoiceField(choices=FORMATS, default="canonical")
    explain = serializers.BooleanField(default=False)
    timeout_ms = serializers.IntegerField(required=False, min_value=0, max_value=60_000)

    def validate_query(self, value: Any) -> Any:
        return _refuse(query_problem(value), value)

    def validate_messages(self, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return _refuse(messages_problem(value), value)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        problem = query_or_messages_problem(attrs)
        if problem:
            raise serializers.ValidationError({"query": [problem]})
        return attrs


# SelectInputSerializer's own rules, written once: its hooks raise them, and the
# plain-body path (selection.api.input) defers to it when any applies.
def query_problem(value: Any) -> str:
    if isinstance(value, str):
        if not value.strip():
            return "query: must not be empty"
        return size_problem("query", value)
    if isinstance(value, dict):
        return size_problem("query", value)
    return "query: must be a string or a JSON object"


def messages_problem(value: list[dict[str, Any]]) -> str:
    for index, message in enumerate(value):
        if not isinstance(message.get("role"), str):
            return f"messages[{index}].role: is required (system, user, ...)"
    return size_problem("messages", value)


def query_or_messages_problem(attrs: dict[str, Any]) -> str:
    if ("query" in attrs) == bool(attrs.get("messages")):
        return "query: give exactly one of query or messages"
    return ""


def _refuse(problem: str, value: Any) -> Any:
    if problem:
        raise serializers.ValidationError(problem)
    return value


class ValidateInputSerializer(StrictFieldsMixin, serializers.Serializer):
    catalog = serializers.SlugField(default="default")
    tool = serializers.CharField(max_length=200)
    arguments = serializers.JSONField()

    def validate_arguments(self, value: Any) -> Any:
        if not isinstance(value, (dict, str)):
            raise serializers.ValidationError(
                "arguments: must be a JSON object or a JSON string"
            )
        check_stored_size("arguments", value)
        return value


class ToolCallsInputSerializer(StrictFieldsMixin, serializers.Serializer):
    """POST /api/v1/tool-calls/validate: a model's output as its provider returns it."""

    output = serializers.JSONField()
    catalog = serializers.SlugField(required=False)
    selection_id = serializers.UUIDField(required=False)
    format = serializers.ChoiceField(choices=CALL_FORMATS, required=False)

    def validate_output(self, value: Any) -> Any:
        check_stored_size("output", value, MAX_TOOL_CHARS)
        return value


class SelectBatchSerializer(StrictFieldsMixin, serializers.Serializer):
    requests = serializers.ListField(
        child=serializers.JSONField(), min_length=1, max_length=MAX_BATCH
    )

    def validate_requests(self, value: list[Any]) -> list[Any]:
        check_stored_size("requests", value, MAX_BATCH_CHARS)
        return value


class SelectBatchOutputSerializer(serializers.Serializer):
    """One answer or one error object per request, in the order of the requests."""

    results = serializers.ListField(child=serializers.DictField())


class PickSerializer(serializers.Serializer):
    name = serializers.CharField()
    score = serializers.FloatField()
    reason = serializers.CharField()
    signals = serializers.DictField(child=serializers.FloatField())
    requires_approval = serializers.BooleanField()
    core = serializers.BooleanField()
    exploration = serializers.BooleanField()
    definition = serializers.DictField()


class ExclusionSerializer(serializers.Serializer):
    name = serializers.CharField()
    stage = serializers.ChoiceField(choices=["policy", "rank"])
    reason = serializers.CharField()
    detail = serializers.CharField()
    score = serializers.FloatField(allow_null=True)


class SelectOutputSerializer(serializers.Serializer):
    """Renders a ``selection.answers.SelectionAnswer``: one field per attribute
    (a test holds the two to the same names)."""

    selection_id = serializers.UUIDField()
    request_id = serializers.UUIDField(allow_null=True)
    catalog = serializers.CharField()
    catalog_version = serializers.IntegerField()
    settings_version = serializers.IntegerField()
    scorer = serializers.CharField()
    tools = PickSerializer(many=True)
    excluded = ExclusionSerializer(
        many=True,
        required=False,
        allow_null=True,
        help_text="only when the request set explain",
    )
    stats = serializers.DictField(
        help_text="counts, latency_ms, timings_ms: milliseconds per stage "
        "(auth, snapshot, embed_query, embed_sentences (the sentences of a long "
        "request, each embedded too), vector_search, engine, definitions, audit, "
        "total), and fusion: how the hybrid scorer weighed its signals for this "
        "catalog and why (chosen_by, weights, lexical_agreement, family_pull, "
        "families, why)"
    )
    cached = serializers.BooleanField()
    degraded = serializers.BooleanField()
    fallback_reason = serializers.CharField(
        allow_blank=True, help_text="why the scorer differs from the one asked for"
    )
    no_tool = serializers.DictField(
        allow_null=True,
        help_text="when no tool fits (tools is empty): reason (below_no_tool_"
        "threshold, learnt_no_tool, below_min_score or no_candidates), best_score "
        "and threshold; learnt_no_tool adds probability, nearest_no_tool and "
        "nearest_tool (threshold is then the probability cut)",
    )
    words_only = serializers.BooleanField(
        help_text="true when the tools were ranked by words alone (BM25F) although "
        "the scorer weighs meaning too: the catalog's tool embeddings are not "
        "ready (or not of a model this server has); ask again once they are"
    )
    words_only_reason = serializers.CharField(
        allow_blank=True, help_text="why, in a sentence (empty unless words_only)"
    )

    def to_representation(self, instance: Any) -> dict[str, Any]:
        return answer_body(instance)


def answer_body(answer: Any) -> dict[str, Any]:
    """A ``SelectionAnswer`` as SelectOutputSerializer's fields render it, built
    directly (its gain: bench/README.md, "Fast paths");
    ``excluded`` only with explain. tests/selection/test_answer_body.py holds it
    to what the declared fields give."""
    body: dict[str, Any] = {
        "selection_id": _maybe(str, answer.selection_id),
        "request_id": _maybe(str, answer.request_id),
        "catalog": _maybe(str, answer.catalog),
        "catalog_version": _maybe(int, answer.catalog_version),
        "settings_version": _maybe(int, answer.settings_version),
        "scorer": _maybe(str, answer.scorer),
        "tools": [_pick_body(tool) for tool in answer.tools],
    }
    if answer.excluded is not None:
        body["excluded"] = [_exclusion_body(item) for item in answer.excluded]
    body["stats"] = _maybe(_any_dict, answer.stats)
    body["cached"] = _maybe(bool, answer.cached)
    body["degraded"] = _maybe(bool, answer.degraded)
    body["fallback_reason"] = _maybe(str, answer.fallback_reason)
    body["no_tool"] = _maybe(_any_dict, answer.no_tool)
    body["words_only"] = _maybe(bool, answer.words_only)
    body["words_only_reason"] = _maybe(str, answer.words_only_reason)
    return body


def _pick_body(tool: Any) -> dict[str, Any]:
    return {
        "name": _maybe(str, tool.name),
        "score": _maybe(float, tool.score),
        "reason": _maybe(str, tool.reason),
        "signals": _maybe(_float_dict, tool.signals),
        "requires_approval": _maybe(bool, tool.requires_approval),
        "core": _maybe(bool, tool.core),
        "exploration": _maybe(bool, tool.exploration),
        "definition": _maybe(_any_dict, tool.definition),
    }


def _exclusion_body(exclusion: Any) -> dict[str, Any]:
    return {
        "name": _maybe(str, exclusion.name),
        "stage": _maybe(str, exclusion.stage),
        "reason": _maybe(str, exclusion.reason),
        "detail": _maybe(str, exclusion.detail),
        "score": _maybe(float, exclusion.score),
    }


def _maybe(render: Any, value: Any) -> Any:
    """A serializer renders an attribute that is None as None, whatever its field."""
    return None if value is None else render(value)


def _any_dict(value: dict[Any, Any]) -> dict[str, Any]:
    return {str(key): item for key, item in value.items()}


def _float_dict(value: dict[Any, Any]) -> dict[str, Any]:
    return {str(key): _maybe(float, item) for key, item in value.items()}


class SelectionSettingsSerializer(StrictFieldsMixin, serializers.Serializer):
    settings = serializers.DictField()
    accept_regression = serializers.CharField(
        required=False,
        write_only=True,
        max_length=1000,
        help_text="a reason to accept a drop of the labelled NDCG@10 (audited)",
    )
    version = serializers.IntegerField(read_only=True)
    reason = serializers.CharField(
        required=False, allow_blank=True, max_length=500, default="", write_only=True
    )


class SettingsChangeSerializer(serializers.Serializer):
    """One version of a catalog's settings: who made it, when, why, what it holds
    (only what differs from the defaults) and what it changed from the one before."""

    version = serializers.IntegerField()
    actor = serializers.CharField(source="actor_name")
    created = serializers.DateTimeField()
    reason = serializers.CharField()
    settings = serializers.JSONField(source="after")
    changes = serializers.SerializerMethodField()

    def get_changes(self, change: Any) -> list[dict[str, Any]]:
        return version_changes(change)


class SettingsRestoreSerializer(StrictFieldsMixin, serializers.Serializer):
    """POST .../versions/{n}/restore: an optional reason to accept a drop of the
    labelled NDCG@10 (the regression gate, learning.gate)."""

    accept_regression = serializers.CharField(
        required=False,
        max_length=1000,
        help_text="a reason to accept a drop of the labelled NDCG@10 (audited)",
    )
