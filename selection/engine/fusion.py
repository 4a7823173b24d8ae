"""The hybrid's fusion, chosen from the catalog itself (no labels, no history).

Two choices differ from catalog to catalog, and both are read off the tools' own
texts when a snapshot is built (``measure``), never per request: how much BM25F
counts (how far the catalog's shared words agree with its embeddings), and how far
a tool is pulled towards the best of its name family. The answer's ``stats.fusion``
says what was chosen and why. Pure: no Django.
The rules: docs/explanation/selection.md, Fusion.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from selection.engine.index import FIELD_TEXT, LexicalIndex
from selection.engine.normalize import NormalizedQuery
from selection.engine.scorers import lexical
from selection.engine.settings import EngineSettings
from selection.engine.text import tokenize
from selection.engine.types import ToolRecord
from selection.engine.vectors import VectorTable

AGREEMENT_SAMPLE = 200  # tools used as queries
AGREEMENT_COLUMNS = 4000  # tools each query's correlation is taken over
AGREEMENT_MIN = 20  # fewer tools (or under half) with vectors: not measured
AGREEMENT_SEED = 20261127
AGREEMENT_LOW, AGREEMENT_HIGH = 0.41, 0.47
LEXICAL_WEIGHT_LOW, LEXICAL_WEIGHT_HIGH = 0.0, 0.4
FAMILY_SIZE = 5
# A request with fewer content words gets that share of the BM25F weight: a
# short, vague request's few words are thin evidence ("I'm planning a trip to
# London.": plan, trip, london).
SHORT_REQUEST_TERMS = 15
QUERY_FIELDS = ("name", "description", "params")
_SEPARATOR = re.compile(r"__|[./:]")


@dataclass(frozen=True, eq=False)
class CatalogFusion:
    """What the catalog's own texts chose for the hybrid scorer."""

    agreement: float | None  # None: not measured (no tool vectors)
    sampled: int
    family: np.ndarray  # family id per row, -1 for a tool without one
    pull_scale: np.ndarray  # per family id: min(1, FAMILY_SIZE / its size)

    @property
    def families(self) -> int:
        return len(self.pull_scale)

    @property
    def lexical_weight(self) -> float | None:
        """The hybrid's ``bm25f`` weight this catalog calls for (None: unknown)."""
        if self.agreement is None:
            return None
        span = AGREEMENT_HIGH - AGREEMENT_LOW
        share = float(np.clip((self.agreement - AGREEMENT_LOW) / span, 0.0, 1.0))
        return LEXICAL_WEIGHT_LOW + share * (LEXICAL_WEIGHT_HIGH - LEXICAL_WEIGHT_LOW)

    def with_tools(self, tools: Sequence[ToolRecord]) -> CatalogFusion:
        """The same measurement over changed tools: families read again, the
        agreement (a catalog-wide mean) kept."""
        family, scale = families(tools)
        return CatalogFusion(self.agreement, self.sampled, family, scale)


def measure(
    tools: Sequence[ToolRecord], index: LexicalIndex, vectors: VectorTable | None
) -> CatalogFusion:
    """The catalog's fusion choices (see the module docstring)."""
    agreement, sampled = lexical_agreement(tools, index, vectors)
    family, scale = families(tools)
    return CatalogFusion(agreement, sampled, family, scale)


def _self_query(tool: ToolRecord) -> NormalizedQuery:
    """A tool's own name, description and parameters as a request's terms."""
    text = " ".join(FIELD_TEXT[name](tool) for name in QUERY_FIELDS)
    return NormalizedQuery(text=text, terms=dict.fromkeys(tokenize(text), 1.0))


def lexical_agreement(
    tools: Sequence[ToolRecord], index: LexicalIndex, vectors: VectorTable | None
) -> tuple[float | None, int]:
    """Mean over sampled tools of corr(BM25F of the tool's own text, cosine to
    its vector) across other tools; (None, 0) without enough vectors."""
    if vectors is None or len(vectors.present) != len(tools):
        return None, 0
    rows = np.flatnonzero(vectors.present)
    if len(rows) < max(AGREEMENT_MIN, len(tools) // 2):  # embeddings pending
        return None, 0
    rng = np.random.default_rng(AGREEMENT_SEED)
    queries = rng.permutation(rows)[:AGREEMENT_SAMPLE]
    columns = np.sort(rng.permutation(rows)[:AGREEMENT_COLUMNS])
    block = vectors.matrix[columns]
    found = []
    for row in queries.tolist():
        others = columns != row
        words = lexical.bm25f(index, _self_query(tools[row]))[columns][others]
        cosines = np.einsum("ij,j->i", block, vectors.matrix[row])[others]
        if words.std() > 0 and cosines.std() > 0:
            found.append(float(np.corrcoef(words, cosines)[0, 1]))
    if not found:
        return None, 0
    return float(np.mean(found)), len(found)


def family_key(name: str) -> str | None:
    """The name's prefix before its last separator (None: no separator)."""
    parts = [m.start() for m in _SEPARATOR.finditer(name)]
    return name[: parts[-1]] if parts and parts[-1] > 0 else None


def families(tools: Sequence[ToolRecord]) -> tuple[np.ndarray, np.ndarray]:
    """Family id per row (-1: none) and each family's pull scale; a prefix that
    only one tool has is no family."""
    keys = [family_key(t.name) for t in tools]
    counts: dict[str, int] = {}
    for key in keys:
        if key is not None:
            counts[key] = counts.get(key, 0) + 1
    ids: dict[str, int] = {}
    family = np.full(len(tools), -1, dtype=np.int64)
    for row, key in enumerate(keys):
        if key is not None and counts[key] > 1:
            family[row] = ids.setdefault(key, len(ids))
    sizes = np.bincount(family[family >= 0], minlength=len(ids)).astype(np.float64)
    scale = np.minimum(1.0, FAMILY_SIZE / np.maximum(sizes, 1.0))
    return family, scale


def pulled(
    fused: np.ndarray, mask: np.ndarray, fusion: CatalogFusion, weight: float
) -> np.ndarray:
    """How far each tool is pulled towards its family's best fused score among
    the ``mask`` tools (0 for tools without a family or outside ``mask``).
    ``fused`` is one request's scores, or one row per request."""
    scores = np.atleast_2d(fused)
    out = np.zeros(scores.shape)
    if weight > 0 and fusion.families:
        rows, cols = np.nonzero(np.atleast_2d(mask) & (fusion.family >= 0))
        ids = fusion.family[cols]
        best = np.full((len(scores), fusion.families), -np.inf)
        np.maximum.at(best, (rows, ids), scores[rows, cols])
        gap = best[rows, ids] - scores[rows, cols]
        out[rows, cols] = weight * fusion.pull_scale[ids] * gap
    return out.reshape(np.shape(fused))


def request_scale(terms: int | None) -> float:
    """The share of the catalog's BM25F weight a request of ``terms`` content
    words gets: all of it from ``SHORT_REQUEST_TERMS`` words up."""
    if terms is None:
        return 1.0
    return min(1.0, terms / SHORT_REQUEST_TERMS)


def hybrid_weights(
    settings: EngineSettings, fusion: CatalogFusion | None, terms: int | None = None
) -> dict[str, float]:
    """The hybrid's signal weights: the settings', with the ``bm25f`` weight the
    catalog measured when ``auto_fusion`` is on, scaled down for a request of
    fewer than ``SHORT_REQUEST_TERMS`` content words (``terms``)."""
    weights = {k: settings.hybrid_weight(k) for k in HYBRID_SIGNALS}
    chosen = fusion.lexical_weight if fusion is not None else None
    if settings.auto_fusion and chosen is not None:
        weights["bm25f"] = chosen * request_scale(terms)
    return weights


HYBRID_SIGNALS = ("embed", "lexical", "bm25f", "tag", "name")


def describe(
    settings: EngineSettings,
    fusion: CatalogFusion | None,
    terms: int | None = None,
    diversified: bool = False,
) -> dict[str, Any]:
    """The fusion of one answer (a request of ``terms`` content words), for its
    ``stats``: the weights used, why they are what they are, and whether its
    top tools were re-ordered for diversity (selection.engine.diversity)."""
    weights = hybrid_weights(settings, fusion, terms)
    measured = fusion is not None and fusion.agreement is not None
    auto = settings.auto_fusion and measured
    out: dict[str, Any] = {
        "chosen_by": "catalog" if auto else "settings",
        "weights": {k: round(v, 4) for k, v in weights.items() if v},
        "family_pull": settings.family_pull,
        "families": fusion.families if fusion is not None else 0,
        "diversity": settings.diversity,
        "diversified": diversified,
    }
    if measured and fusion is not None and fusion.agreement is not None:
        out["lexical_agreement"] = round(fusion.agreement, 4)
        out["agreement_sample"] = fusion.sampled
    out["why"] = _why(settings, fusion, auto, terms)
    return out


def _why(
    settings: EngineSettings,
    fusion: CatalogFusion | None,
    auto: bool,
    terms: int | None,
) -> str:
    """One sentence on the lexical weight's origin."""
    if auto and fusion is not None and fusion.agreement is not None:
        text = (
            f"In this catalog BM25F scores and embeddings agree at "
            f"{fusion.agreement:.2f} (tools' own texts as queries), so BM25F gets "
            f"weight {fusion.lexical_weight:.2f} (0 at {AGREEMENT_LOW:g} or under, "
            f"{LEXICAL_WEIGHT_HIGH:g} at {AGREEMENT_HIGH:g} or over)"
        )
        scale = request_scale(terms)
        if scale < 1 and fusion.lexical_weight:
            text += (
                f", x{scale:.2f} for a request of {terms} content words "
                f"(full from {SHORT_REQUEST_TERMS})"
            )
        return text + "."
    if not settings.auto_fusion:
        return "auto_fusion is off: the settings' hybrid weights are used."
    return (
        "The catalog's agreement between words and embeddings is not measured "
        "(no tool vectors in this process): the settings' hybrid weights are used."
    )
