"""Ranking designs tried against attacker tools and for examples, as switches a
benchmark can turn on (``--design NAME[:VALUE]``); only ``today`` is the engine.

Each design patches the engine's module constants or one function in this
process, so a benchmark can measure what a design would have done on the same
data, same run. Measured and not kept (bench/README.md, "A ranking nobody can
buy" and "The headline request"):

* ``main``: the engine before this session: no keyword-share credit, examples
  outside the keyword share and every example word counted, invisible
  characters read as separators;
* ``knee:K``: the keyword share's credit from K x the median (today 4);
* ``hubs:B``: cosine minus B x (the tool's mean cosine to the other tools minus
  the catalog's median of it), a local-scaling correction for hubs;
  ``hub-tail:B`` the same beyond the catalog's 99th percentile only;
* ``length:K``: the whole score times min(1, K x median / distinct words);
* ``idf-share``: the keyword share weighted by IDF;
* ``example-share:S``: an example word's weight in the keyword share (today 0.5);
* ``every-example-word``: example words count whether the catalog describes
  them or not;
* ``cap:K``: a description counts only its leading K x the catalog's median
  number of words, in the lexical index and in the embedded text (names,
  parameters and examples as now);
* ``coherence:T``: a description of several sentences whose sentence vectors
  stand apart (mean cosine to their own centroid under T) is embedded as its
  lead sentence alone; ``coherence-drop:T`` embeds none of it;
  ``coherence-lex:T`` neither embeds nor indexes it;
* ``A+B``: two designs at once.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

import bench._data as data_module
import selection.engine.index as index_module
import selection.engine.scorers as scorers
import selection.engine.scorers.hybrid  # noqa: F401 (the module, not the function)
import selection.engine.text as text_module
from selection.engine.scorers import lexical, simple

hybrid_module = sys.modules["selection.engine.scorers.hybrid"]


def _every_example_word(_: float) -> None:
    index_module.kept_described = lambda ft, described: None  # type: ignore[assignment]


def _main(_: float) -> None:
    index_module.LONG_TEXT_KNEE = float("inf")
    lexical.EXAMPLE_SHARE = 0.0
    _every_example_word(0.0)
    text_module.visible = lambda text: text  # type: ignore[assignment]


def _knee(value: float) -> None:
    index_module.LONG_TEXT_KNEE = value


def _example_share(value: float) -> None:
    lexical.EXAMPLE_SHARE = value


def _sizes(index: Any) -> np.ndarray:
    docs = index.fields["overlap_examples"].docs
    return np.bincount(docs, minlength=index.n_docs).astype(np.float64)


def _hubs(beta: float, line: float = 50.0) -> None:
    """Cosine minus beta x the tool's mean cosine to the other tools beyond the
    ``line`` percentile of the catalog's."""

    def excess(snapshot: Any) -> np.ndarray:
        found = snapshot.__dict__.get("_hub_excess")
        if found is None:
            matrix = snapshot.vectors.matrix
            cos = matrix @ matrix.T
            np.fill_diagonal(cos, np.nan)
            mean = np.nanmean(cos, axis=1)
            found = np.maximum(mean - np.percentile(mean, line), 0.0)
            snapshot.__dict__["_hub_excess"] = found
        return np.asarray(found)

    def raw(ctx: Any) -> np.ndarray:
        cos = simple.semantic_raw(ctx)
        if ctx.snapshot.vectors is None:
            return cos
        return np.where(cos != 0, cos - beta * excess(ctx.snapshot), 0.0)

    hybrid_module.semantic_raw = raw  # type: ignore[attr-defined]


def _length(knee: float) -> None:
    """The whole hybrid score times min(1, knee x median / distinct words)."""
    before = hybrid_module.hybrid

    def hybrid(ctx: Any) -> Any:
        out = before(ctx)
        index = ctx.snapshot.index
        sizes = _sizes(index)
        norm = float(np.median(sizes[sizes > 0]))
        out.scores = out.scores * np.minimum(1.0, knee * norm / np.maximum(sizes, 1))
        return out

    scorers.SCORERS["hybrid"] = hybrid


def _idf_share(_: float) -> None:
    def keyword(index: Any, query: Any) -> np.ndarray:
        ids, weights = lexical.known_terms(index, query)
        mass = lexical.query_mass(index, query)
        if mass <= 0:
            return np.zeros(index.n_docs)
        docs, which, _ = index.fields["overlap"].gather(ids)
        per = weights * index.idf[ids].astype(np.float64)
        found = lexical._summed(index.n_docs, docs, per[which]) / mass
        return np.asarray(found * index.share_credit)

    lexical.keyword = keyword


# The catalog being measured: its median description length in words (set as
# its specs are loaded, for ``cap``).
_CATALOG: dict[str, float] = {}


def _embedded(transform: Callable[[Any], Any]) -> None:
    """Every benchmark's tool text made from ``transform(spec)`` instead of the
    spec, and the catalog's median description length noted on loading."""
    before, load = data_module.tool_embedding_text, data_module.load_specs

    def text(spec: Any) -> str:
        return before(transform(spec))

    def specs(name: str) -> Any:
        found = load(name)
        lengths = [len(s.description.split()) for s in found]
        _CATALOG["median"] = float(statistics.median(lengths)) if lengths else 1.0
        return found

    for module in list(sys.modules.values()):
        if getattr(module, "tool_embedding_text", None) is before:
            module.tool_embedding_text = text  # type: ignore[attr-defined]
        if getattr(module, "load_specs", None) is load:
            module.load_specs = specs  # type: ignore[attr-defined]


def _leading(description: str, factor: float) -> str:
    limit = max(1, int(factor * _CATALOG.get("median", 1.0)))
    found = description.split()
    return " ".join(found[:limit]) if len(found) > limit else description


def _cap(factor: float) -> None:
    """The description's leading ``factor`` x median words, lexical and semantic."""
    _embedded(
        lambda spec: replace(spec, description=_leading(spec.description, factor))
    )
    fields = index_module.FIELD_TEXT
    fields["description"] = lambda t: _leading(t.description, factor)
    before = index_module.LexicalIndex._tokenize_all

    def tokenize_all(self: Any, tools: Any) -> Any:
        lengths = [len(t.description.split()) for t in tools]
        _CATALOG["median"] = float(statistics.median(lengths)) if lengths else 1.0
        return before(self, tools)

    index_module.LexicalIndex._tokenize_all = tokenize_all  # type: ignore[method-assign]


def _coherence(line: float, keep_lead: bool = True, lexical: bool = False) -> None:
    """A dispersed description embedded as its lead sentence (or not at all;
    ``lexical``: nor indexed)."""
    from selection.engine.sentences import _BOUNDARY

    embedder: list[Any] = []
    seen: dict[str, float] = {}

    def coherence(description: str) -> float:
        if description not in seen:
            parts = [p.strip() for p in _BOUNDARY.split(description[:1500])]
            parts = [p for p in parts if len(p.split()) >= 3]
            if len(parts) < 2:
                seen[description] = 1.0
            else:
                if not embedder:
                    embedder.append(data_module.get_embedder())
                v = np.asarray(embedder[0].embed_documents(parts), np.float64)
                v /= np.linalg.norm(v, axis=1, keepdims=True)
                centre = v.mean(axis=0)
                centre /= np.linalg.norm(centre)
                seen[description] = float((v @ centre).mean())
        return seen[description]

    def transform(spec: Any) -> Any:
        if coherence(spec.description) >= line:
            return spec
        lead = _BOUNDARY.split(spec.description.strip(), maxsplit=1)[0]
        return replace(spec, description=lead if keep_lead else "")

    _embedded(transform)
    if lexical:
        index_module.FIELD_TEXT["description"] = lambda t: transform(t).description


DESIGNS: dict[str, Callable[[float], None]] = {
    "today": lambda _: None,
    "main": _main,
    "knee": _knee,
    "hubs": _hubs,
    "hub-tail": lambda beta: _hubs(beta, 99.0),
    "length": _length,
    "idf-share": _idf_share,
    "example-share": _example_share,
    "every-example-word": _every_example_word,
    "cap": _cap,
    "coherence": _coherence,
    "coherence-drop": lambda line: _coherence(line, keep_lead=False),
    "coherence-lex": lambda line: _coherence(line, keep_lead=False, lexical=True),
}


def apply(design: str) -> None:
    """Turn on ``NAME`` or ``NAME:VALUE`` (see the module docstring)."""
    if "+" in design:
        for part in design.split("+"):
            apply(part)
        return
    name, _, value = design.partition(":")
    if name not in DESIGNS:
        raise SystemExit(f"--design: one of {', '.join(DESIGNS)} (got {name!r})")
    DESIGNS[name](float(value) if value else 0.0)
