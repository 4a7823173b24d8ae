"""Selection: run the engine on a catalog snapshot, shape the answer, audit it.

The engine itself (selection.engine) is pure; this module feeds it the snapshot, the
semantic pool from pgvector and the LLM callable, caches whole answers on exactly
(catalog version, settings version, request), and writes one audit row per answer.
"""

from __future__ import annotations

import copy
import hashlib
import json
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import asdict, replace
from typing import Any

from audit.choices import EventType
from audit.services import record_event
from catalog.formats import export_tool
from catalog.models import Catalog, Tool
from catalog.services.tools import tool_to_spec
from selection.adapters.llm import llm_callable
from selection.adapters.pgvector import semantic_pool
from selection.adapters.snapshots import get_snapshot
from selection.engine.engine import select
from selection.engine.normalize import normalize
from selection.engine.types import SelectionRequest, SelectionResult

SEMANTIC_SCORERS = {"embedding", "hybrid", "ensemble", "llm"}
ANSWER_CACHE_SIZE = 5_000
DEFINITION_CACHE_SIZE = 20_000
_lock = threading.Lock()
_answers: OrderedDict[str, dict[str, Any]] = OrderedDict()
# (catalog id, catalog version, update time, format, tool name) -> definition.
# Any write to a catalog's tools bumps its version, so an entry never goes stale.
_definitions_cache: OrderedDict[tuple[Any, ...], dict[str, Any]] = OrderedDict()


def cache_key(
    catalog: Catalog, version: str, request: SelectionRequest, fmt: str
) -> str:
    """Exactly (catalog, its version and update time, settings version, request)."""
    stamp = catalog.updated.isoformat()
    body = json.dumps(
        [catalog.pk, version, stamp, asdict(request), fmt], sort_keys=True, default=str
    )
    return hashlib.sha256(body.encode()).hexdigest()


def select_tools(
    catalog: Catalog,
    request: SelectionRequest,
    *,
    fmt: str,
    actor: Any,
    request_id: uuid.UUID | None = None,
) -> dict[str, Any]:
    """The answer to one selection request (see the API docs for its shape)."""
    started = time.perf_counter()
    snapshot, names = get_snapshot(catalog)
    key = cache_key(catalog, snapshot.version, request, fmt)
    cached = _cached(key)
    if cached is None:
        answer = _compute(catalog, (snapshot, names), request, fmt, started)
        if not answer["degraded"]:
            # A degraded answer (timeout, fallback) must not outlive its cause.
            _store(key, copy.deepcopy(answer))
    else:
        answer = {**cached, "cached": True}
    answer["stats"] = {
        **answer["stats"],
        "latency_ms": round((time.perf_counter() - started) * 1000, 3),
    }
    versions = answer.pop("_versions", {})
    selection_id = uuid.uuid4()
    answer["stats"]["hidden"] = answer["stats"].get("hidden", 0)
    record_event(
        EventType.SELECTION,
        actor=actor,
        request_id=request_id,
        selection_id=selection_id,
        catalog_slug=catalog.slug,
        catalog_version=catalog.version,
        summary=_summary(request, answer),
        input={"request": asdict(request), "format": fmt},
        output=_audit_output(answer, versions),
    )
    return {
        "selection_id": str(selection_id),
        "request_id": str(request_id) if request_id else None,
        **answer,
    }


def _compute(
    catalog: Catalog,
    snapshot_and_names: tuple[Any, dict[int, str]],
    request: SelectionRequest,
    fmt: str,
    started: float,
) -> dict[str, Any]:
    snapshot, names = snapshot_and_names
    scorer = request.scorer or snapshot.settings.default_scorer
    semantic = None
    if scorer in SEMANTIC_SCORERS:
        text = normalize(request).embed_text
        pool = semantic_pool(
            catalog, text, snapshot.settings.candidate_pool, len(snapshot.tools)
        )
        if pool is not None:
            semantic = {names[i]: s for i, s in pool.items() if i in names}
    if request.timeout_ms is not None:
        spent = (time.perf_counter() - started) * 1000
        request = replace(request, timeout_ms=max(0.0, request.timeout_ms - spent))
    llm = llm_callable() if scorer == "llm" else None
    result = select(snapshot, request, semantic=semantic, llm=llm)
    return _shape(catalog, snapshot.version, result, request, fmt)


def _shape(
    catalog: Catalog,
    version: str,
    result: SelectionResult,
    request: SelectionRequest,
    fmt: str,
) -> dict[str, Any]:
    definitions = _definitions(catalog, [pick.name for pick in result.tools], fmt)
    answer: dict[str, Any] = {
        "catalog": catalog.slug,
        "catalog_version": catalog.version,
        "settings_version": int(version.split(".")[-1]),
        "scorer": result.scorer,
        "tools": [
            {
                "name": pick.name,
                "score": round(pick.score, 6),
                "reason": pick.reason,
                "signals": {k: round(v, 6) for k, v in pick.signals.items()},
                "requires_approval": pick.requires_approval,
                "core": pick.core,
                "exploration": pick.exploration,
                "definition": definitions[pick.name],
            }
            for pick in result.tools
        ],
        "stats": {
            "considered": result.stats.considered,
            "excluded_by_policy": result.stats.excluded_by_policy,
            "below_min_score": result.stats.below_min_score,
            "hidden": result.stats.hidden,
            "engine_ms": round(result.stats.elapsed_ms, 3),
        },
        "cached": False,
        "degraded": result.degraded,
        # Audit only (popped before the answer leaves): what each pick was then.
        "_versions": _versions(catalog, [pick.name for pick in result.tools]),
    }
    if result.fallback_reason:
        answer["fallback_reason"] = result.fallback_reason
    if request.explain:
        answer["excluded"] = [asdict(exclusion) for exclusion in result.excluded]
    return answer


def _definitions(catalog: Catalog, names: list[str], fmt: str) -> dict[str, Any]:
    """Each picked tool's provider-ready definition, read once per catalog version."""
    stamp = (catalog.pk, catalog.version, catalog.updated.isoformat(), fmt)
    found: dict[str, Any] = {}
    with _lock:
        for name in names:
            definition = _definitions_cache.get((*stamp, name))
            if definition is not None:
                found[name] = copy.deepcopy(definition)
    missing = [name for name in names if name not in found]
    if missing:
        tools = Tool.objects.filter(catalog=catalog, name__in=missing)
        fresh = {tool.name: export_tool(tool_to_spec(tool), fmt) for tool in tools}
        with _lock:
            for name, definition in fresh.items():
                _definitions_cache[(*stamp, name)] = copy.deepcopy(definition)
            while len(_definitions_cache) > DEFINITION_CACHE_SIZE:
                _definitions_cache.popitem(last=False)
        found.update(fresh)
    return found


def _cached(key: str) -> dict[str, Any] | None:
    with _lock:
        answer = _answers.get(key)
        if answer is None:
            return None
        _answers.move_to_end(key)
    return copy.deepcopy(answer)


def _store(key: str, answer: dict[str, Any]) -> None:
    with _lock:
        _answers[key] = answer
        if len(_answers) > ANSWER_CACHE_SIZE:
            _answers.popitem(last=False)


def _summary(request: SelectionRequest, answer: dict[str, Any]) -> str:
    picked = ", ".join(tool["name"] for tool in answer["tools"]) or "no tool"
    query = request.query if isinstance(request.query, str) else "(structured input)"
    if request.messages:
        query = "(conversation)"
    return f"{query[:150]} -> {picked}"


def _versions(catalog: Catalog, names: list[str]) -> dict[str, dict[str, Any]]:
    """Each pick's version and content hash, so a later tool call can be checked
    against the exact version offered (selection.toolcalls)."""
    if not names:
        return {}
    rows = Tool.objects.filter(catalog=catalog, name__in=names)
    return {
        name: {"version": version, "content_hash": digest}
        for name, version, digest in rows.values_list("name", "version", "content_hash")
    }


def _audit_output(
    answer: dict[str, Any], versions: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """The answer without the (large, reproducible) provider definitions, with
    each pick's version and content hash."""
    tools = [
        {
            **{k: v for k, v in t.items() if k != "definition"},
            **versions.get(t["name"], {}),
        }
        for t in answer["tools"]
    ]
    return {**answer, "tools": tools}
