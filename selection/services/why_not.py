""" "Why was tool X not offered?" for a recorded selection, by record or by replay.

First the record: a pick, or an exclusion the answer named. Otherwise the selection
is replayed exactly as it ran: the catalog as it stood then (each tool's last change
record before the selection), the settings version it names, the recorded request,
and the vectors of that time. Vectors are addressed by model and text hash: a stored
vector with the same hash is the one used; the bundled model is deterministic, so a
missing one is recomputed from the same text by the same model. When an input cannot
be had (another model), the answer says which instead of guessing.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from audit.models import AuditEvent
from catalog.embedding_text import embedding_text, text_hash
from catalog.formats import estimate_prompt_tokens
from catalog.models import Catalog, ToolChange, ToolEmbedding
from catalog.spec import SpecError, spec_from_dict
from embeddings.backends import local_static_encoder
from selection.adapters.pgvector import backend_for, embed_query, sentence_vectors
from selection.engine.engine import select
from selection.engine.normalize import normalize
from selection.engine.policy import policy_codes
from selection.engine.records import record_from_dict
from selection.engine.sentences import pooled
from selection.engine.settings import EngineSettings
from selection.engine.snapshot import CatalogSnapshot
from selection.engine.types import POLICY_REASONS, SelectionRequest
from selection.models import SelectionSettingsChange
from selection.registry import learnt_signal


@dataclass
class WhyNot:
    """The answer: where the tool fell out, and how it was found."""

    tool: str
    outcome: str  # picked | excluded | not_in_catalog | unknown
    stage: str = ""
    reason: str = ""
    detail: str = ""
    source: str = "record"  # record | replay
    score: float | None = None
    rank: int | None = None
    cutoff_score: float | None = None
    min_score: float | None = None
    reproduces: bool | None = None
    missing: list[str] = field(default_factory=list)


def why_not(event: AuditEvent, tool: str) -> WhyNot:
    """Where ``tool`` fell out of the recorded selection ``event``."""
    found = _from_record(event, tool)
    if found is not None:
        return found
    specs = catalog_at(event)
    if tool not in specs:
        return WhyNot(
            tool,
            "not_in_catalog",
            detail="The catalog had no tool of this name when the selection ran.",
        )
    return _replay(event, tool, specs)


def _from_record(event: AuditEvent, tool: str) -> WhyNot | None:
    picks = [pick["name"] for pick in event.output.get("tools", [])]
    if tool in picks:
        pick = event.output["tools"][picks.index(tool)]
        return WhyNot(
            tool, "picked", detail=pick.get("reason", ""), score=pick.get("score"),
            rank=picks.index(tool) + 1,
        )  # fmt: skip
    for exclusion in event.output.get("excluded") or []:
        if exclusion["name"] == tool:
            return WhyNot(
                tool, "excluded", stage=exclusion["stage"],
                reason=exclusion["reason"], detail=exclusion["detail"],
                score=exclusion.get("score"),
            )  # fmt: skip
    return None


def catalog_at(event: AuditEvent) -> dict[str, dict[str, Any]]:
    """Tool name -> canonical spec, as the catalog stood when ``event`` was made,
    in the order the tools were created (the snapshot's order)."""
    catalog = Catalog.objects.filter(slug=event.catalog_slug).first()
    if catalog is None:
        return {}
    changes = ToolChange.objects.filter(
        catalog=catalog, created__lte=event.created
    ).order_by("id")
    state: dict[str, dict[str, Any]] = {}
    for name, action, after in changes.values_list("tool_name", "action", "after"):
        if action == "delete":
            state.pop(name, None)
        elif after is not None:
            state[name] = after
    return state


def _settings_at(catalog: Catalog, version: int) -> EngineSettings:
    if version == 0:
        return EngineSettings()
    row = SelectionSettingsChange.objects.filter(catalog=catalog, version=version)
    data = row.values_list("after", flat=True).first()
    return EngineSettings.from_dict(data or {})


def _request_of(event: AuditEvent) -> SelectionRequest:
    recorded = dict(event.input.get("request", {}))
    known = {f.name for f in fields(SelectionRequest)}
    data = {k: v for k, v in recorded.items() if k in known}
    for key, value in list(data.items()):
        if isinstance(value, list) and key != "messages":
            data[key] = tuple(value)
    data["timeout_ms"] = None  # the replay has all the time it needs
    data["explain"] = True
    return SelectionRequest(**data)


def _replay(event: AuditEvent, tool: str, specs: dict[str, Any]) -> WhyNot:
    catalog = Catalog.objects.get(slug=event.catalog_slug)
    proposed = (event.input or {}).get("proposed_settings")
    settings = (
        EngineSettings.from_dict(proposed)  # "try with these settings"
        if proposed
        else _settings_at(catalog, int(event.output.get("settings_version", 0)))
    )
    records = tuple(
        record_from_dict(_with_tokens(spec), position, position)
        for position, spec in enumerate(specs.values())
    )
    snapshot = CatalogSnapshot(
        catalog=catalog.slug,
        version="replay",
        tools=records,
        settings=settings,
        learnt=learnt_signal(catalog, settings.learnt_model),
    ).warm()
    request = _request_of(event)
    encoder = event.output.get("stats", {}).get("sentence_encoder")
    semantic, missing = _semantic(catalog, specs, request, settings, encoder)
    vector = _learnt_vector(catalog, snapshot, request)
    result = select(snapshot, request, semantic=semantic, vector=vector)
    recorded = [pick["name"] for pick in event.output.get("tools", [])]
    answer = locate(snapshot, request, result, tool)
    answer.source = "replay"
    answer.reproduces = result.names == recorded and not missing
    answer.missing = missing
    return answer


def _learnt_vector(
    catalog: Catalog, snapshot: CatalogSnapshot, request: SelectionRequest
) -> np.ndarray | None:
    """The request's vector, for a replay whose settings applied a learnt model."""
    backend = backend_for(catalog.active_embedding_model)
    if snapshot.learnt is None or backend is None:
        return None
    return embed_query(normalize(request).embed_text, backend)


def _with_tokens(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec with the prompt-token estimate the catalog stored for it."""
    try:
        return {**spec, "prompt_tokens": estimate_prompt_tokens(spec_from_dict(spec))}
    except SpecError:
        return dict(spec)


def _semantic(
    catalog: Catalog,
    specs: dict[str, Any],
    request: SelectionRequest,
    settings: EngineSettings,
    encoder_id: str | None,
) -> tuple[dict[str, float] | None, list[str]]:
    """The semantic pool of that time, exactly (no HNSW approximation), with the
    sentences embedded by the recorded static encoder when one served."""
    model_id = catalog.active_embedding_model
    if not model_id:
        return None, []
    backend = backend_for(model_id)
    if backend is None:
        return None, [f"the embedding model {model_id!r} is not available here"]
    texts: dict[str, str] = {}
    for name, spec in specs.items():
        try:
            texts[name] = embedding_text(spec_from_dict(dict(spec)))
        except SpecError:
            return None, [f"the recorded definition of {name!r} cannot be read"]
    fast = local_static_encoder(wait=True) if encoder_id else None
    if encoder_id and (fast is None or fast.encoder_id != encoder_id):
        return None, [f"the static sentence encoder {encoder_id!r} is not available"]
    vectors = _vectors(catalog, backend, texts)
    text = normalize(request).embed_text
    query = embed_query(text, backend)
    names = list(texts)
    matrix = np.stack([vectors[n] for n in names])
    scores = matrix @ query
    sentences = sentence_vectors(text, backend, fast)
    if len(sentences):  # the same sentence-mixed pool as selection (select.py)
        rows = pooled(scores, sentences @ matrix.T, settings.candidate_pool)
        return rows.renamed(names.__getitem__), []
    top = np.argsort(-scores, kind="stable")[: settings.candidate_pool]
    return {names[i]: float(scores[i]) for i in top}, []


def _vectors(catalog: Catalog, backend: Any, texts: dict[str, str]) -> dict[str, Any]:
    """Each text's vector: the stored one with its hash, else the model's again."""
    hashes = {name: text_hash(text, backend.model_id) for name, text in texts.items()}
    stored = {
        digest: np.asarray(vector, dtype=np.float32)
        for digest, vector in ToolEmbedding.objects.filter(
            catalog=catalog, model_id=backend.model_id, text_hash__in=hashes.values()
        ).values_list("text_hash", "embedding")
    }
    missing = [name for name in texts if hashes[name] not in stored]
    fresh = backend.embed_documents([texts[n] for n in missing]) if missing else []
    out = {name: stored[hashes[name]] for name in texts if hashes[name] in stored}
    out.update(dict(zip(missing, fresh, strict=True)))
    return out


def locate(
    snapshot: CatalogSnapshot, request: SelectionRequest, result: Any, tool: str
) -> WhyNot:
    """Where ``tool`` fell out of a selection ``result`` replayed on ``snapshot``
    (public: the evaluation explains its misses with it)."""
    if tool in result.names:
        return WhyNot(tool, "picked", rank=result.names.index(tool) + 1)
    row = snapshot.by_name[tool]
    code = int(policy_codes(snapshot, request)[row])
    if code:
        reason = POLICY_REASONS[code - 1]
        return WhyNot(tool, "excluded", stage="policy", reason=reason)
    for exclusion in result.excluded:
        if exclusion.name == tool:
            return WhyNot(
                tool, "excluded", stage=exclusion.stage, reason=exclusion.reason,
                detail=exclusion.detail, score=exclusion.score,
            )  # fmt: skip
    scores = [pick.score for pick in result.tools]
    return WhyNot(
        tool,
        "excluded",
        stage="rank",
        reason="cut",
        detail="Ranked below the picks (or without any evidence for this request).",
        cutoff_score=min(scores) if scores else None,
        min_score=request.min_score,
    )
