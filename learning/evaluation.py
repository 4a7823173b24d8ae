"""Evaluating a catalog on labelled requests: the real selection path, in process.

Each request runs as the bench runs it (bench/quality.py ``run_engine``): the
catalog's snapshot, the semantic pool as /select builds it, and the engine with every
tool allowed, so the ranking is measured, not a caller's view; never over HTTP,
never audited as a selection, never cached. Each distinct request is evaluated once,
its repeats counted. The metrics and the report: docs/how-to/labels-and-evaluation.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from django.core.exceptions import ValidationError

from catalog.models import Catalog
from learning.metrics import mean_metrics, query_metrics
from learning.services.labels import request_key
from selection.adapters.snapshots import get_snapshot
from selection.engine.engine import select
from selection.engine.settings import EngineSettings
from selection.engine.snapshot import CatalogSnapshot
from selection.engine.types import SelectionRequest, SelectionResult
from selection.services.select import (
    SEMANTIC_SCORERS,
    NamedSnapshot,
    semantic_for,
)
from selection.services.settings import checked_settings
from selection.services.why_not import locate as locate_tool

TOP = 10
MISS_RANK = 3  # an expected tool below this rank is a miss
MAX_ROWS = 10_000
ROW_TEXT = 300
DEFAULT = SelectionRequest()
Progress = Callable[[int], None]


@dataclass(frozen=True)
class LabelledRequest:
    """One request to evaluate: a label of the catalog (``label_id``) or inline;
    ``repeats`` labels of the same request were folded into it, ``other_tools``
    of them naming a tool the labels before them did not."""

    query: str
    messages: list[dict[str, Any]] | None
    tools: list[str]
    label_id: int | None = None
    repeats: int = 0
    other_tools: int = 0


def distinct_requests(items: Iterable[LabelledRequest]) -> list[LabelledRequest]:
    """Each request once, where it first appears: a repeat (the same query, or
    the same messages) is counted, and the tools it names that the request's
    labels so far did not are added (each label says which tools fit the request;
    a repeat naming others says more fit, as the data sets merge their repeated
    queries, shared/bench/data)."""
    merged: dict[str, LabelledRequest] = {}
    for item in items:
        key = request_key(item.query, item.messages)
        first = merged.get(key)
        if first is None:
            merged[key] = item
            continue
        extra = [tool for tool in item.tools if tool not in first.tools]
        merged[key] = replace(
            first,
            tools=[*first.tools, *extra],
            repeats=first.repeats + 1 + item.repeats,
            other_tools=first.other_tools + int(bool(extra)) + item.other_tools,
        )
    return list(merged.values())


def parse_settings(data: Any) -> EngineSettings:
    """Settings to try, validated exactly as the selection-settings API does
    (selection.services.settings.checked_settings): each bad field is named
    ``settings.<field>``."""
    if not isinstance(data, dict):
        raise ValidationError({"settings": ["settings: must be an object"]})
    return checked_settings(data)


class Ranker:
    """The catalog's selection path, kept open for many requests."""

    def __init__(self, catalog: Catalog, settings_data: dict[str, Any] | None) -> None:
        snapshot, names = get_snapshot(catalog)
        if settings_data is not None:
            snapshot = replace(snapshot, settings=parse_settings(settings_data)).warm()
        self.catalog = catalog
        self.snapshot: CatalogSnapshot = snapshot
        self.names = names

    def request(self, item: LabelledRequest, *, explain: bool = False) -> Any:
        return SelectionRequest(
            query=item.query if item.messages is None else None,
            messages=item.messages,
            max_candidates=TOP,
            min_score=0.0,
            allow_unsafe=True,
            explain=explain,
        )

    def run(self, request: SelectionRequest) -> SelectionResult:
        scorer = request.scorer or self.snapshot.settings.default_scorer
        semantic, vector = None, None
        if scorer in SEMANTIC_SCORERS:
            semantic, vector = semantic_for(
                self.catalog, NamedSnapshot(self.snapshot, self.names), request
            )
        return select(self.snapshot, request, semantic=semantic, vector=vector)


def answered_at_defaults(ranker: Ranker, item: LabelledRequest) -> list[str]:
    """What an agent asking with the default request (its candidates and
    ``min_score``) would be offered: the engine's own answer, so the catalog's
    no-tool threshold and learnt no-tool decision both apply."""
    request = replace(
        ranker.request(item),
        max_candidates=DEFAULT.max_candidates,
        min_score=DEFAULT.min_score,
    )
    return ranker.run(request).names


def evaluate(
    catalog: Catalog,
    labels: Sequence[LabelledRequest],
    settings_data: dict[str, Any] | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """The report: ``metrics`` and ``rows`` (see the module's docstring)."""
    ranker = Ranker(catalog, settings_data)
    per_query: list[dict[str, float]] = []
    no_tool: list[bool] = []
    rows: list[dict[str, Any]] = []
    for index, item in enumerate(labels):
        result = ranker.run(ranker.request(item))
        names = result.names
        row = _row(index, item, names)
        if item.tools:
            scores = query_metrics(names, item.tools)
            per_query.append(scores)
            row["ndcg"] = scores["NDCG@10"]
            row["miss"] = any(
                e["rank"] is None or e["rank"] > MISS_RANK for e in row["expected"]
            )
            if row["miss"] and index < MAX_ROWS:
                _why_not(ranker, item, row)
        else:
            answered = answered_at_defaults(ranker, item)
            no_tool.append(bool(answered))
            row["answered"] = answered
            row["miss"] = bool(answered)
        if index < MAX_ROWS:
            rows.append(row)
        if progress is not None:
            progress(index + 1)
    metrics = summarise(per_query, no_tool, len(labels))
    metrics["repeats"] = sum(item.repeats for item in labels)
    metrics["repeats_with_other_tools"] = sum(item.other_tools for item in labels)
    return {"metrics": metrics, "rows": rows}


def summarise(
    per_query: list[dict[str, float]], no_tool: list[bool], total: int
) -> dict[str, Any]:
    """Means of learning.metrics over labelled requests, and the no-tool rates."""
    metrics: dict[str, Any] = dict(mean_metrics(per_query))
    metrics["requests"] = total
    metrics["with_tools"] = len(per_query)
    metrics["no_tool_requests"] = len(no_tool)
    rate = sum(no_tool) / len(no_tool) if no_tool else None
    metrics["no_tool_fp_rate"] = rate
    metrics["no_tool_recall"] = None if rate is None else 1 - rate
    return metrics


def _row(index: int, item: LabelledRequest, names: list[str]) -> dict[str, Any]:
    text = item.query if item.messages is None else _last_text(item.messages)
    return {
        "index": index,
        "label_id": item.label_id,
        "text": text[:ROW_TEXT],
        "expected": [
            {"tool": tool, "rank": names.index(tool) + 1 if tool in names else None}
            for tool in item.tools
        ],
        "top": names[:MISS_RANK],
        **({"repeats": item.repeats} if item.repeats else {}),
    }


def _last_text(messages: list[dict[str, Any]]) -> str:
    """The last message's text, for showing a conversation in one line."""
    content = messages[-1].get("content") if messages else ""
    return content if isinstance(content, str) else "(conversation)"


def _why_not(ranker: Ranker, item: LabelledRequest, row: dict[str, Any]) -> None:
    """Where each missed expected tool fell out, from an explained run."""
    request = ranker.request(item, explain=True)
    result = ranker.run(request)
    for expected in row["expected"]:
        if expected["rank"] is not None and expected["rank"] <= MISS_RANK:
            continue
        if expected["tool"] not in ranker.snapshot.by_name:
            expected["why_not"] = {
                "outcome": "not_in_catalog",
                "detail": "The catalog has no tool of this name now.",
            }
            continue
        found = asdict(locate_tool(ranker.snapshot, request, result, expected["tool"]))
        found["source"] = "evaluation"
        expected["why_not"] = {k: v for k, v in found.items() if v not in (None, [])}
