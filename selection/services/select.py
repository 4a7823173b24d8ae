"""Selection: run the engine on a catalog snapshot, shape the answer, audit it.

The engine itself (selection.engine) is pure; this module feeds it the snapshot, the
semantic pool from pgvector and the LLM callable, caches whole answers on exactly
(catalog version, settings version, request), and writes one audit row per answer.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, Required, TypedDict, Unpack

from audit.actors import Actor
from audit.choices import EventType
from audit.services import EventFields, PendingEvent, record_event
from catalog.formats import export_tool
from catalog.models import Catalog
from catalog.pinning import tool_definition_hash
from catalog.reads import tools_named
from catalog.services.tools import tool_to_spec
from catalog.versions import request_sight, visible_version
from identity.access import access_for
from selection.adapters.kept import STORE, deep_size
from selection.adapters.llm import llm_callable
from selection.adapters.pgvector import (
    embed_sentences,
    query_vector,
    search_mixed,
    sentence_encoder,
)
from selection.adapters.snapshots import get_snapshot, snapshot_stamp
from selection.answers import SelectionAnswer, build_answer
from selection.engine.engine import select
from selection.engine.normalize import normalize
from selection.engine.sentences import SentencePool, split_sentences
from selection.engine.settings import EngineSettings
from selection.engine.snapshot import CatalogSnapshot
from selection.engine.types import SelectionRequest
from selection.services.timings import Arrival, Stopwatch
from selection.services.words_only import words_only_reason
from telemetry import metrics, tracing

SEMANTIC_SCORERS = {"embedding", "hybrid", "ensemble", "llm"}
# At most this many of each are kept (selection.adapters.kept: within the
# process's memory budget besides).
ANSWER_CACHE_SIZE = 5_000
DEFINITION_CACHE_SIZE = 20_000
# An answer and each pick's version and content hash (for the audit row), kept
# as ("answer", its cache key).
CachedAnswer = tuple[SelectionAnswer, dict[str, dict[str, Any]]]
# A pick's definition is kept as ("definition", (catalog id, catalog version,
# update time, format, tool name)): any write to a catalog's tools bumps its
# version, so an entry never goes stale.


def cache_key(
    catalog: Catalog, version: str, request: SelectionRequest, fmt: str
) -> str:
    """Exactly (catalog, its version and update time, settings version, request)."""
    stamp = catalog.updated.isoformat()
    body = json.dumps(
        [catalog.pk, version, stamp, request_fields(request), fmt],
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(body.encode()).hexdigest()


def request_fields(request: SelectionRequest) -> dict[str, Any]:
    """The request's fields by name, for JSON (the cache key, the audit row):
    what ``asdict`` gives, without its deep copies (nothing here is changed, only
    encoded; ``asdict`` twice was ~8% of a cached answer's CPU)."""
    return {field.name: getattr(request, field.name) for field in _REQUEST_FIELDS}


_REQUEST_FIELDS = fields(SelectionRequest)


def select_tools(
    catalog: Catalog, request: SelectionRequest, **options: Unpack[SelectOptions]
) -> SelectionAnswer:
    """``_select_tools`` in its span (``quiver.select``, its stages as children),
    counted in the metrics by catalog, scorer and channel."""
    began = time.perf_counter()
    channel = options.get("channel", "api")
    with tracing.span("quiver.select", **{"quiver.catalog": catalog.slug}):
        served = _select_tools(catalog, request, **options)
        tracing.annotate(
            **{
                "quiver.selection_id": served.selection_id,
                "quiver.request_id": served.request_id,
                "quiver.channel": channel,
                "quiver.scorer": served.scorer,
                "quiver.cached": served.cached,
                "quiver.picked": len(served.tools),
                "quiver.no_tool": served.no_tool is not None,
            }
        )
    metrics.selection_answered(
        catalog.slug,
        served.scorer,
        channel,
        cached=served.cached,
        no_tool=served.no_tool is not None,
        degraded=served.degraded,
        seconds=time.perf_counter() - began,
    )
    return served


class SelectOptions(TypedDict, total=False):
    fmt: Required[str]
    actor: Required[Any]
    request_id: uuid.UUID | None
    arrived: Arrival | None
    pending: list[PendingEvent] | None
    channel: str
    proposed: EngineSettings | None


def _select_tools(
    catalog: Catalog,
    request: SelectionRequest,
    *,
    fmt: str,
    actor: Actor,
    request_id: uuid.UUID | None = None,
    arrived: Arrival | None = None,
    pending: list[PendingEvent] | None = None,
    channel: str = "api",
    proposed: EngineSettings | None = None,
) -> SelectionAnswer:
    """The answer to one selection request, with its audit row (same transaction).

    ``channel``: how the caller asked (``api``: REST, ``mcp``: the MCP endpoint),
    kept in the row's input.
    ``stats.timings_ms`` says where this answer's time went; ``arrived``: when the
    request arrived and the milliseconds before the view (auth).
    ``pending``: the row may commit beside the caller (audit.writer); its handle
    is appended there, and the caller waits on it before sending the answer.
    ``proposed``: rank under these settings instead of the saved ones (a
    curator's "try with these settings"): never cached, and the row records them.
    """
    began = time.perf_counter()
    watch = Stopwatch(arrived.started if arrived else began)
    watch.ms["auth"] = arrived.auth_ms if arrived else 0.0
    with watch.stage("snapshot"):
        snapshot, names = get_snapshot(catalog)
    if proposed is not None:
        snapshot = snapshot.with_settings(proposed)
    answer, versions, cached = _answer(
        catalog,
        NamedSnapshot(snapshot, names),
        request,
        Shaping(fmt, watch),
        cacheable=proposed is None,
    )
    served = answer.served(
        selection_id=str(uuid.uuid4()),
        request_id=str(request_id) if request_id else None,
        latency_ms=(time.perf_counter() - began) * 1000,
        cached=cached,
        timings_ms=watch.report(),
    )
    with watch.stage("audit"):
        handle = _audit(
            catalog,
            request,
            fmt,
            served,
            Asker(actor, request_id, versions),
            soon=pending is not None,
            channel=channel,
            proposed=proposed,
        )
        if pending is not None:
            pending.append(handle)
    return served.with_timings(watch.report())


@dataclass(frozen=True)
class NamedSnapshot:
    """A catalog's snapshot and its tool id -> name map (``get_snapshot``'s pair)."""

    snapshot: CatalogSnapshot
    names: dict[int, str]


@dataclass(frozen=True)
class Shaping:
    """The format an answer's definitions are given in, and the stopwatch that
    times its stages."""

    fmt: str
    watch: Stopwatch


@dataclass(frozen=True)
class Asker:
    """Whom a selection's audit row names, and each pick's version and hashes."""

    actor: Actor
    request_id: uuid.UUID | None
    versions: dict[str, dict[str, Any]]


def _answer(
    catalog: Catalog,
    named: NamedSnapshot,
    request: SelectionRequest,
    shaping: Shaping,
    *,
    cacheable: bool,
) -> tuple[SelectionAnswer, dict[str, dict[str, Any]], bool]:
    """The answer from the cache or computed, and whether it was cached. An answer
    under proposed settings is not ``cacheable``: never read from or kept in the
    cache (its key names the saved settings' version)."""
    fmt = shaping.fmt
    key = cache_key(catalog, snapshot_stamp(named.snapshot), request, fmt)
    hit = _cached(key) if cacheable else None
    if hit is not None:
        return hit[0], hit[1], True
    answer, versions = _compute(catalog, named, request, shaping)
    if cacheable and not answer.degraded:
        # A degraded answer (timeout, fallback) must not outlive its cause.
        _store(key, (answer, versions))
    return answer, versions, False


def _audit(
    catalog: Catalog,
    request: SelectionRequest,
    fmt: str,
    served: SelectionAnswer,
    asker: Asker,
    *,
    soon: bool,
    channel: str = "api",
    proposed: EngineSettings | None = None,
) -> PendingEvent:
    """The selection's row: written now, or (``soon``) committing beside the
    caller, who waits on the handle before sending the answer. A row ranked
    under proposed settings keeps them, so it is never read as the saved ones."""
    actor = asker.actor
    extra = {"proposed_settings": proposed.to_dict()} if proposed else {}
    row = EventFields(
        actor=actor,
        request_id=asker.request_id,
        selection_id=uuid.UUID(served.selection_id),
        catalog_slug=catalog.slug,
        catalog_version=catalog.version,
        summary=_summary(request, served),
        input={**_audit_input(request, fmt, actor), "channel": channel, **extra},
        output=served.audit_record(asker.versions),
    )
    if soon:
        return record_event(EventType.SELECTION, soon=True, **row)
    return PendingEvent(record_event(EventType.SELECTION, **row))


def _audit_input(request: SelectionRequest, fmt: str, actor: Actor) -> dict[str, Any]:
    """What was asked, by whom with which access, and a hash of the input itself."""
    access = access_for(actor)
    client = getattr(actor, "api_client", None)
    given = {"query": request.query, "messages": request.messages}
    digest = hashlib.sha256(
        json.dumps(given, sort_keys=True, default=str).encode()
    ).hexdigest()
    return {
        "request": request_fields(request),
        "format": fmt,
        "input_hash": digest,
        "caller": {
            "scope": access.scope,
            "client": client.name if client is not None else None,
            "catalogs": list(access.catalogs) if access.catalogs is not None else None,
            "roles": list(access.roles) if access.roles is not None else None,
            "allow_unsafe": access.allow_unsafe,
        },
    }


def _compute(
    catalog: Catalog,
    named: NamedSnapshot,
    request: SelectionRequest,
    shaping: Shaping,
) -> CachedAnswer:
    """The answer and each pick's version and content hash."""
    snapshot, fmt, watch = named.snapshot, shaping.fmt, shaping.watch
    scorer = request.scorer or snapshot.settings.default_scorer
    semantic, sentence_encoder_id, vector = None, None, None
    if scorer in SEMANTIC_SCORERS:
        with tracing.span("quiver.select.semantic_pool"):
            semantic, sentence_encoder_id, vector = _semantic(
                catalog, named, request, watch
            )
    if request.timeout_ms is not None:
        spent = watch.elapsed_ms()
        request = replace(request, timeout_ms=max(0.0, request.timeout_ms - spent))
    llm = llm_callable() if scorer == "llm" else None
    with watch.stage("engine"):
        result = select(
            snapshot,
            request,
            semantic=semantic,
            llm=llm,
            vector=vector,
            stage=tracing.stages("quiver.select"),
        )
    with watch.stage("definitions"):
        picked = _picked(catalog, result.names, fmt)
    sight = request_sight(request.visible_roles, request.visible_unsafe)
    answer = build_answer(
        catalog=catalog.slug,
        catalog_version=visible_version(catalog, sight),
        settings_version=int(snapshot.version.split(".")[-1]),
        result=result,
        request=request,
        definitions={name: pick.definition for name, pick in picked.items()},
    )
    if semantic is None and (why := words_only_reason(catalog, scorer)):
        answer = replace(answer, words_only=True, words_only_reason=why)
    if sentence_encoder_id:  # recorded, so a replay uses the same encoder
        answer = replace(
            answer, stats={**answer.stats, "sentence_encoder": sentence_encoder_id}
        )
    versions = {
        name: {
            "version": pick.version,
            "content_hash": pick.content_hash,
            "definition_hash": pick.definition_hash,
        }
        for name, pick in picked.items()
    }
    return answer, versions


def _semantic(
    catalog: Catalog,
    named: NamedSnapshot,
    request: SelectionRequest,
    watch: Stopwatch,
) -> tuple[dict[str, float] | None, str | None, Any]:
    """Tool name -> semantic score for the semantic pool: in process from the
    snapshot's vectors when it holds the active model's, else from pgvector;
    and the id of the static encoder that embedded the sentences, if one did.

    A request of several sentences also embeds each sentence (selection.engine.
    sentences); one of a single sentence is scored by its cosine alone. The
    whole request goes through the full model, its sentences through the static
    encoder when one is built (bench/README.md, "Static query encoder")."""
    snapshot, names = named.snapshot, named.names
    pool = snapshot.settings.candidate_pool
    text = normalize(request).embed_text
    with watch.stage("embed_query"):
        found = query_vector(catalog, text)
    if found is None:
        return None, None, None
    vector, backend = found
    parts = split_sentences(text)
    sentences, fast = embed_sentences([], backend), None
    if parts:  # the stage stays 0.0 for a request of one sentence
        with watch.stage("embed_sentences"):
            fast = sentence_encoder(backend)
            sentences = embed_sentences(parts, backend, fast)
    used = fast.encoder_id if fast is not None else None
    table = snapshot.vectors
    with watch.stage("vector_search"):
        if table is not None and table.model_id == backend.model_id:
            rows = table.nearest_mixed(vector, sentences, pool)
            return snapshot.named_pool(rows), used, vector
        count = len(snapshot.tools)
        hits = search_mixed(catalog, (vector, sentences), backend, pool, count)
    return _named(hits, names.get), used, vector


def semantic_for(
    catalog: Catalog, named: NamedSnapshot, request: SelectionRequest
) -> tuple[dict[str, float] | None, Any]:
    """The semantic pool and request vector exactly as /select computes them (for
    in-process evaluations: learning's cross-validation and its gate)."""
    pool, _, vector = _semantic(catalog, named, request, Stopwatch(0.0))
    return pool, vector


def _named(
    rows: Mapping[int, float], name_of: Callable[[int], str | None]
) -> dict[str, float]:
    """The pool keyed by tool name (a SentencePool stays one, see its docs)."""
    if isinstance(rows, SentencePool):
        return rows.renamed(name_of)
    named = ((name_of(row), score) for row, score in rows.items())
    return {name: score for name, score in named if name is not None}


@dataclass(frozen=True)
class Picked:
    """What an answer shows and records of one pick: its provider-ready definition
    (shared by every answer that offers it: never changed), version, content
    hash, and the hash of the definition agents read (catalog.pinning): the
    audit chain shows which definition each selection offered."""

    definition: dict[str, Any]
    version: int
    content_hash: str
    definition_hash: str


def _picked(catalog: Catalog, names: list[str], fmt: str) -> dict[str, Picked]:
    """Each pick's definition, version and hash, read once per catalog version:
    any write to a catalog's tools bumps its version, so an entry never goes
    stale, and a request whose picks are all known runs no query."""
    stamp = (catalog.pk, catalog.version, catalog.updated.isoformat(), fmt)
    found = {
        name: hit
        for name in names
        if (hit := STORE.get(("definition", (*stamp, name)))) is not None
    }
    missing = [name for name in names if name not in found]
    if missing:
        tools = tools_named(catalog, missing)
        fresh = {
            tool.name: Picked(
                export_tool(tool_to_spec(tool), fmt),
                tool.version,
                tool.content_hash,
                tool_definition_hash(tool),
            )
            for tool in tools
        }
        for name, pick in fresh.items():
            key = ("definition", (*stamp, name))
            STORE.put(key, pick, deep_size(pick), most=DEFINITION_CACHE_SIZE)
        found.update(fresh)
    return found


def _cached(key: str) -> CachedAnswer | None:
    """Answers are frozen and never changed once built, so hits share them."""
    hit: CachedAnswer | None = STORE.get(("answer", key))
    return hit


def _store(key: str, answer: CachedAnswer) -> None:
    size = deep_size(answer, stop=(CatalogSnapshot,))
    STORE.put(("answer", key), answer, size, most=ANSWER_CACHE_SIZE)


def _summary(request: SelectionRequest, answer: SelectionAnswer) -> str:
    picked = ", ".join(answer.names) or "no tool"
    query = request.query if isinstance(request.query, str) else "(structured input)"
    if request.messages:
        query = "(conversation)"
    return f"{query[:150]} -> {picked}"
