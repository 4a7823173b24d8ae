"""Running the real selection path over a catalog's labels, in process.

Shared by the learn job (the engine's scores that ``learning.fit`` fuses with)
and the regression gate (the cross-validated NDCG@10 of two settings). Each
label is embedded once per process and model (``selection.adapters.pgvector``'s
query cache) and ranked exactly as /select ranks (``semantic_for``), with
``min_score`` 0 and 50 candidates, never over HTTP.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from catalog.models import Catalog
from learning.fit import Labelled, folds_of, held_out_signals, relevance
from learning.metrics import ndcg_at_10
from learning.models import Label, LabelStatus
from learning.tuning import LabelParts, parts_of
from selection.adapters.snapshots import get_snapshot
from selection.engine.engine import select
from selection.engine.learnt import LearntSignal, fuse
from selection.engine.normalize import normalize
from selection.engine.settings import EngineSettings
from selection.engine.snapshot import CatalogSnapshot
from selection.engine.types import SelectionRequest
from selection.services.select import NamedSnapshot, semantic_for

DEPTH = 50
# The gate scores at most this many labels (a fixed random sample): a settings
# change is answered synchronously.
GATE_SAMPLE = 300


@dataclass(frozen=True)
class Prepared:
    """The catalog's accepted labels as the fit needs them."""

    tools: tuple[str, ...]
    labels: list[Labelled]
    requests: list[SelectionRequest]


def accepted_labels(catalog: Catalog) -> list[Label]:
    """The catalog's accepted labels, oldest first."""
    return list(
        Label.objects.filter(catalog=catalog, status=LabelStatus.ACCEPTED).order_by(
            "id"
        )
    )


def label_request(label: Label) -> SelectionRequest:
    """The selection request a label stands for."""
    if label.messages:
        return SelectionRequest(messages=label.messages, max_candidates=DEPTH)
    return SelectionRequest(query=label.query, max_candidates=DEPTH)


def prepare(catalog: Catalog, labels: Sequence[Label]) -> Prepared:
    """Vectors, terms and tool rows of each label (unknown tools are skipped)."""
    snapshot, names = get_snapshot(catalog)
    tools = tuple(t.name for t in snapshot.tools)
    at = {name: i for i, name in enumerate(tools)}
    out, requests = [], []
    for label in labels:
        request = label_request(label)
        query = normalize(request)
        _, vector = semantic_for(catalog, NamedSnapshot(snapshot, names), request)
        if vector is None:
            vector = np.zeros(1, dtype=np.float32)
        rows = tuple(at[name] for name in label.tools if name in at)
        if label.tools and not rows:
            continue  # every tool it names is gone: it says nothing now
        out.append(Labelled(vector, query.terms, query.embed_text, rows))
        requests.append(request)
    return Prepared(tools, out, requests)


def base_scores(
    catalog: Catalog,
    snapshot: CatalogSnapshot,
    names: dict[int, str],
    requests: Sequence[SelectionRequest],
) -> np.ndarray:
    """The engine's scores (no learnt signal) per request over the tools."""
    plain = replace(snapshot, learnt=None)
    at = {tool.name: i for i, tool in enumerate(plain.tools)}
    out = np.zeros((len(requests), len(plain.tools)))
    for j, request in enumerate(requests):
        request = replace(request, min_score=0.0, max_candidates=DEPTH)
        pool, _ = semantic_for(catalog, NamedSnapshot(snapshot, names), request)
        for pick in select(plain, request, semantic=pool).tools:
            out[j, at[pick.name]] = max(pick.score, 1e-9)
    return out


def label_parts(
    catalog: Catalog,
    snapshot: CatalogSnapshot,
    names: dict[int, str],
    requests: Sequence[SelectionRequest],
) -> list[LabelParts]:
    """The hybrid scorer's settings-free inputs per request (learning.tuning),
    with the semantic pool /select would use; ``Tuner.matrix`` of them under
    the snapshot's settings is ``base_scores``."""
    plain = replace(snapshot, learnt=None)
    out = []
    for request in requests:
        request = replace(request, min_score=0.0, max_candidates=DEPTH)
        pool, _ = semantic_for(catalog, NamedSnapshot(snapshot, names), request)
        out.append(parts_of(plain, request, pool))
    return out


def settings_ndcg(
    catalog: Catalog,
    engine_settings: EngineSettings,
    prepared: Prepared,
    learnt: LearntSignal | None,
) -> float:
    """Cross-validated NDCG@10 of ``engine_settings`` on a sample of the labels:
    the engine's ranking, plus (with a learnt model) its signal for each label
    built without that label's fold."""
    snapshot, names = get_snapshot(catalog)
    snapshot = replace(snapshot, settings=engine_settings, learnt=None)
    rows = _sample([i for i, lab in enumerate(prepared.labels) if lab.tools])
    if not len(rows):
        return 0.0
    base = base_scores(catalog, snapshot, names, [prepared.requests[i] for i in rows])
    if learnt is not None and learnt.weights:
        folds = folds_of(len(prepared.labels), 3)
        signals = held_out_signals(
            prepared.tools, prepared.labels, folds, rows, learnt.k
        )
        base = fuse(base, signals, learnt.weights)
    rel = relevance(prepared.labels, rows, len(prepared.tools))
    return float(ndcg_at_10(base, rel).mean())


def _sample(rows: list[int]) -> np.ndarray:
    """At most ``GATE_SAMPLE`` of ``rows``, the same ones every time."""
    found = np.array(rows, dtype=np.int64)
    if len(found) <= GATE_SAMPLE:
        return found
    pick = np.random.default_rng(7).permutation(len(found))[:GATE_SAMPLE]
    return np.sort(found[pick])
