"""Tool-selection quality of the engine's scorers against two plain peers.

    .venv/bin/python bench/quality.py [--data metatool|sealtools|all] [--limit N]
        [--design NAME[:VALUE]]
    .venv/bin/python bench/quality.py --speed        # in-process latency, 4k / 100k

For each data set (``shared/bench/data``) it prints Recall@1/3/5/10, NDCG@10 and MRR
for every engine scorer and for two peers built here: Okapi BM25 over name +
description (k1=1.2, b=0.75, lower-case word tokens) and plain cosine over the
same model's embeddings of name + description. On MetaTool it also reports the
no-tool false-positive rate at the default request (3 candidates, min_score
0.05) next to single-tool Recall@3 at min_score 0.05 and at 0, and the default's
R@1 / NDCG@10 per request source. ``--design``: see bench/_designs.py. The semantic
pool passed to the engine is the exact top ``candidate_pool`` by cosine, which
is what pgvector returns in the app. See bench/README.md, section "Quality".
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._data import (  # noqa: E402
    CACHE_DIR,
    DATASETS,
    SOURCES,
    EmbeddingCache,
    Query,
    get_embedder,
    load_queries,
    load_specs,
    tool_embedding_text,
)
from bench._designs import apply  # noqa: E402
from catalog.encoder_texts import ToolText, training_texts  # noqa: E402
from catalog.spec import ToolSpec  # noqa: E402
from catalog.tool_text import schema_properties, split_identifier
from embeddings.backends import local_onnx_encoder  # noqa: E402
from embeddings.static import (  # noqa: E402
    StaticQueryEncoder,
    load_encoder,
    save_weights,
)
from embeddings.static_training import build_weights  # noqa: E402
from learning.metrics import KS, mean_metrics, query_metrics  # noqa: E402, F401
from selection.engine import (  # noqa: E402
    CatalogSnapshot,
    EngineSettings,
    SelectionRequest,
    ToolRecord,
    record_from_dict,
    select,
)
from selection.engine.normalize import normalize  # noqa: E402
from selection.engine.sentences import pooled, split_sentences  # noqa: E402
from selection.engine.vectors import VectorTable, unit_rows  # noqa: E402

ENGINE_SCORERS = ("keyword", "bm25f", "embedding", "hybrid", "ensemble")
# The fixed random halves of bench/quality_fusion.py (A = tune, B = check).
HALF_SEED = 20261123
Ranker = Callable[[int, Query], list[str]]


def records_from_specs(specs: Sequence[ToolSpec]) -> tuple[ToolRecord, ...]:
    """Engine records; schemaless tools (MetaTool's plugins) count as read-only."""
    out = []
    for i, spec in enumerate(specs):
        data = spec.to_dict()
        if data["parameters"] is None:
            data.update(allow_no_schema=True, no_schema_mode="read-only")
        out.append(record_from_dict(data, i, i))
    return tuple(out)


# --- metrics ----------------------------------------------------------------------


# --- peers ------------------------------------------------------------------------


def hybrid_text(spec: ToolSpec) -> str:
    """The third peer's text: the split name, the description, and each parameter's
    split name and description."""
    params = " ".join(
        f"{' '.join(words)} {desc}"
        for words, desc in schema_properties(spec.parameters)
    )
    name = " ".join(split_identifier(spec.name))
    return f"{name} {spec.description} {params}".strip()


class PlainBM25:
    """Okapi BM25 over ``name description``, lower-case ``\\w+`` tokens, no extras."""

    def __init__(
        self,
        specs: Sequence[ToolSpec],
        k1: float = 1.2,
        b: float = 0.75,
        texts: Sequence[str] | None = None,
    ) -> None:
        self.names = [s.name for s in specs]
        texts = texts or [f"{s.name} {s.description}" for s in specs]
        docs = [self.tokens(text) for text in texts]
        lengths = np.array([len(d) for d in docs], dtype=float)
        df = Counter(t for d in docs for t in set(d))
        n = len(docs)
        self.postings: dict[str, list[tuple[int, float]]] = {}
        for i, doc in enumerate(docs):
            norm = k1 * (1 - b + b * lengths[i] / max(lengths.mean(), 1))
            for term, tf in Counter(doc).items():
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                weight = idf * tf * (k1 + 1) / (tf + norm)
                self.postings.setdefault(term, []).append((i, weight))

    @staticmethod
    def tokens(text: str) -> list[str]:
        """Lower-case word tokens."""
        return re.findall(r"\w+", text.lower())

    def scores(self, text: str) -> np.ndarray:
        """BM25 of every tool for ``text``."""
        scores = np.zeros(len(self.names))
        for term in set(self.tokens(text)):
            for i, w in self.postings.get(term, ()):
                scores[i] += w
        return scores

    def rank(self, text: str, k: int = 10) -> list[str]:
        """Top ``k`` tool names by BM25."""
        return top_names(self.scores(text), self.names, k)


def zscores(values: np.ndarray) -> np.ndarray:
    """Standardised over the catalog (0 where every value is the same)."""
    spread = values.std()
    return (values - values.mean()) / spread if spread > 0 else values * 0.0


def top_names(scores: np.ndarray, names: Sequence[str], k: int) -> list[str]:
    """Names of the ``k`` best positive scores, ties by catalog order."""
    rows = np.flatnonzero(scores > 0)
    rows = rows[np.lexsort((rows, -scores[rows]))][:k]
    return [names[int(i)] for i in rows]


# --- one data set ------------------------------------------------------------------


@dataclass
class Prepared:
    """Everything the rankers of one data set need."""

    name: str
    specs: list[ToolSpec]
    snapshot: CatalogSnapshot
    queries: list[Query]
    tool_vecs: np.ndarray
    peer_vecs: np.ndarray
    query_vecs: np.ndarray
    hybrid_vecs: np.ndarray
    sentence_vecs: list[np.ndarray]


def prepare(name: str, limit: int | None, cache: EmbeddingCache) -> Prepared:
    """Load tools and queries, build the snapshot and fetch cached embeddings."""
    specs = load_specs(name)
    queries = load_queries(name, limit)
    tool_vecs = cache.get([tool_embedding_text(s) for s in specs])
    # The tool vectors in process, as the app holds them for catalogs up to
    # QUIVER_INPROCESS_VECTORS_MAX tools (the fusion measures the catalog on them).
    table = VectorTable(
        cache.embedder.model_id, unit_rows(tool_vecs), np.ones(len(specs), bool)
    )
    records = records_from_specs(specs)
    snapshot = CatalogSnapshot(name, "bench", records, vectors=table).warm()
    sentences = [split_sentences(embed_text(q.text)) for q in queries]
    flat = sorted({s for group in sentences for s in group})
    at = {s: i for i, s in enumerate(flat)}
    vecs = cache.get(flat, kind="query") if flat else np.zeros((0, 0))
    return Prepared(
        name=name,
        specs=specs,
        snapshot=snapshot,
        queries=queries,
        tool_vecs=tool_vecs,
        peer_vecs=cache.get([f"{s.name}: {s.description}" for s in specs]),
        query_vecs=cache.get([q.text for q in queries], kind="query"),
        hybrid_vecs=cache.get([hybrid_text(s) for s in specs]),
        sentence_vecs=[vecs[[at[s] for s in group]] for group in sentences],
    )


def embed_text(text: str) -> str:
    """The text the app embeds for a request with this query."""
    return normalize(SelectionRequest(query=text)).embed_text


def semantic_pool(data: Prepared, i: int, size: int) -> dict[str, float]:
    """Exactly the app's semantic pool: the top ``size`` tools by cosine, and for
    a request of several sentences the union with each sentence's top ``size``,
    scored by selection.engine.sentences (the app's in-process path)."""
    query = data.query_vecs[i]
    if WHOLE_FROM_SENTENCES[0] and len(data.sentence_vecs[i]):
        mean = data.sentence_vecs[i].mean(axis=0)
        query = mean / max(float(np.linalg.norm(mean)), 1e-12)
    whole = data.tool_vecs @ query
    per_sentence = np.zeros((0, len(whole)))
    if len(data.sentence_vecs[i]):
        per_sentence = data.sentence_vecs[i] @ data.tool_vecs.T
    rows = pooled(whole, per_sentence, size)
    return rows.renamed(lambda j: data.specs[j].name)


# --whole-from-sentences (experiment): a request of several sentences takes the
# normalised mean of its sentence vectors as its whole-request vector.
WHOLE_FROM_SENTENCES = [False]

Ranked = list[tuple[list[str], list[float]]]


def run_engine(data: Prepared, scorer: str) -> tuple[Ranked, float]:
    """Top 10 names and scores per query (min_score 0), and ms per query.

    One pass serves every report: the default request's answer (3 candidates,
    min_score 0.05) is the first three of these with a score of at least 0.05.
    """
    pool = data.snapshot.settings.candidate_pool
    out: Ranked = []
    elapsed = 0.0
    for i, query in enumerate(data.queries):
        semantic = semantic_pool(data, i, pool)
        request = SelectionRequest(
            query=query.text, scorer=scorer, max_candidates=10, min_score=0.0
        )
        start = time.perf_counter()
        result = select(data.snapshot, request, semantic=semantic)
        elapsed += time.perf_counter() - start
        out.append((result.names, [p.score for p in result.tools]))
    return out, elapsed * 1000 / max(len(data.queries), 1)


def peer_rankers(data: Prepared) -> dict[str, Ranker]:
    """The three peers: plain BM25 and plain cosine over name + description, and
    the plain hybrid anyone can write: 0.7 x z(cosine) + 0.3 x z(BM25), both over
    the split name, description and parameter names and descriptions."""
    bm25 = PlainBM25(data.specs)
    rich = PlainBM25(data.specs, texts=[hybrid_text(s) for s in data.specs])
    names = [s.name for s in data.specs]

    def cosine(i: int, query: Query) -> list[str]:
        return top_names(data.peer_vecs @ data.query_vecs[i] + 2.0, names, 10)

    def hybrid(i: int, query: Query) -> list[str]:
        fused = 0.7 * zscores(data.hybrid_vecs @ data.query_vecs[i])
        fused += 0.3 * zscores(rich.scores(query.text))
        return top_names(fused - fused.min() + 1.0, names, 10)

    return {
        "peer: BM25 name+desc": lambda i, q: bm25.rank(q.text),
        "peer: cosine": cosine,
        "peer: plain hybrid": hybrid,
    }


def evaluate(data: Prepared, rank: Ranker) -> tuple[list[dict[str, float]], float]:
    """Per-query metrics of a peer over queries with labels, and ms per query."""
    rows, start, count = [], time.perf_counter(), 0
    for i, query in enumerate(data.queries):
        if query.relevant:
            rows.append(query_metrics(rank(i, query), query.relevant))
            count += 1
    elapsed = (time.perf_counter() - start) * 1000 / max(count, 1)
    return rows, elapsed


def halves(rows: list[dict[str, float]]) -> tuple[float, float]:
    """Mean NDCG@10 on half A and half B of the labelled queries."""
    half = np.random.default_rng(HALF_SEED).permutation(len(rows)) % 2
    ndcg = np.array([r["NDCG@10"] for r in rows])
    return float(ndcg[half == 0].mean()), float(ndcg[half == 1].mean())


def ranked_metrics(data: Prepared, ranked: Ranked) -> list[dict[str, float]]:
    """Per-query metrics of an engine run over queries with labels."""
    return [
        query_metrics(names, q.relevant)
        for q, (names, _) in zip(data.queries, ranked, strict=True)
        if q.relevant
    ]


def no_tool_check(data: Prepared, ranked: Ranked) -> dict[str, float] | None:
    """FP rate on no-tool queries at the default request; single-tool R@3 drop."""
    min_score = SelectionRequest().min_score
    fp, r3, r3_zero = [], [], []
    for q, (names, scores) in zip(data.queries, ranked, strict=True):
        kept = [
            n for n, sc in zip(names[:3], scores[:3], strict=True) if sc >= min_score
        ]
        if not q.relevant:
            fp.append(bool(kept))
        elif q.subset == "single_tool":
            r3.append(query_metrics(kept, q.relevant)["R@3"])
            r3_zero.append(query_metrics(names[:3], q.relevant)["R@3"])
    if not fp or not r3:
        return None
    return {
        "fp": float(np.mean(fp)),
        "r3_default": float(np.mean(r3)),
        "r3_zero": float(np.mean(r3_zero)),
    }


# --- report -------------------------------------------------------------------------

COLUMNS = ("R@1", "R@3", "R@5", "R@10", "NDCG@10", "MRR")


def print_table(title: str, rows: list[tuple[str, dict[str, float], str]]) -> None:
    """A fixed-width table: one row per ranker, metrics then free-form notes."""
    print(f"\n{title}")
    header = f"{'ranker':<24}" + "".join(f"{c:>9}" for c in COLUMNS) + "  notes"
    print(header)
    print("-" * len(header))
    for label, metrics, notes in rows:
        if metrics:
            cells = "".join(f"{metrics[c]:>9.3f}" for c in COLUMNS)
        else:
            cells = "".join(f"{'-':>9}" for _ in COLUMNS)
        print(f"{label:<24}{cells}  {notes}")


def run_dataset(data: Prepared, default: str) -> None:
    """Print the quality table and the no-tool check of one data set."""
    labelled = sum(1 for q in data.queries if q.relevant)
    rows: list[tuple[str, dict[str, float], str]] = []
    checks: dict[str, dict[str, float] | None] = {}
    split: dict[str, tuple[float, float]] = {}
    defaults: Ranked = []
    for scorer in ENGINE_SCORERS:
        ranked, ms = run_engine(data, scorer)
        tag = " (default)" if scorer == default else ""
        per_query = ranked_metrics(data, ranked)
        split[scorer + tag] = halves(per_query)
        rows.append((scorer + tag, mean_metrics(per_query), f"{ms:.1f} ms/q"))
        checks[scorer] = no_tool_check(data, ranked)
        if scorer == default:
            defaults = ranked
    rows.append(("llm", {}, "skipped: no LLM endpoint in the benchmark"))
    for label, rank in peer_rankers(data).items():
        per_query, ms = evaluate(data, rank)
        split[label] = halves(per_query)
        rows.append((label, mean_metrics(per_query), f"{ms:.1f} ms/q"))
    title = (
        f"{data.name}: {len(data.specs)} tools, {labelled} labelled queries "
        "(top 10, min_score 0; ms/q = engine time per query)"
    )
    print_table(title, rows)
    best_peer = max(r[1]["NDCG@10"] for r in rows if r[0].startswith("peer"))
    mine = next(r[1]["NDCG@10"] for r in rows if r[0].startswith(default))
    print(
        f"default '{default}' NDCG@10 {mine:.3f} vs best peer {best_peer:.3f}: "
        f"{mine - best_peer:+.3f} (target +0.050)"
    )
    print(f"NDCG@10 on the halves of bench/quality_fusion.py (seed {HALF_SEED}):")
    for label, (a, b) in split.items():
        print(f"  {label:<24} A {a:.3f}  B {b:.3f}")
    print_sources(data, defaults, default)
    print_no_tool(data.name, checks, default)


def print_sources(data: Prepared, ranked: Ranked, default: str) -> None:
    """R@1 and NDCG@10 per request source; the held-out ones also together."""
    held = set(SOURCES.get(data.name, ()))
    groups: dict[str, list[dict[str, float]]] = {}
    for q, (names, _) in zip(data.queries, ranked, strict=True):
        if q.relevant:
            metrics = query_metrics(names, q.relevant)
            groups.setdefault(q.subset or "-", []).append(metrics)
    together = [m for subset in held for m in groups.get(subset, [])]
    print(f"\n{data.name}: '{default}' per request source (* held out)")
    print(f"  {'source':<32}{'queries':>8}{'R@1':>9}{'NDCG@10':>9}")
    rows = [(s + ("*" if s in held else ""), r) for s, r in sorted(groups.items())]
    for label, found in [*rows, ("held-out sources", together)]:
        if found:
            means = mean_metrics(found)
            print(
                f"  {label:<32}{len(found):>8}{means['R@1']:>9.3f}"
                f"{means['NDCG@10']:>9.3f}"
            )


def print_no_tool(
    name: str, checks: dict[str, dict[str, float] | None], default: str
) -> None:
    """The no-tool false-positive table (3 candidates, min_score 0.05)."""
    if not any(checks.values()):
        print(f"{name}: no no-tool queries, false-positive check skipped")
        return
    print(f"\n{name}: no-tool false positives at the default request")
    print(f"{'scorer':<24}{'FP rate':>9}{'R@3 .05':>9}{'R@3 0':>9}{'drop':>9}")
    for scorer, check in checks.items():
        if check is None:
            continue
        drop = check["r3_zero"] - check["r3_default"]
        tag = " (default)" if scorer == default else ""
        print(
            f"{scorer + tag:<24}{check['fp']:>9.3f}{check['r3_default']:>9.3f}"
            f"{check['r3_zero']:>9.3f}{drop:>9.3f}"
        )
    print("targets for the default: FP rate <= 0.200, drop <= 0.030")


def main(argv: Sequence[str] | None = None) -> None:
    """Parse arguments and run the quality or speed benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", choices=[*DATASETS, "all"], default="all")
    parser.add_argument("--limit", type=int, default=None, help="first N queries")
    parser.add_argument("--speed", action="store_true", help="latency instead")
    parser.add_argument(
        "--static-from",
        choices=[*DATASETS, "all"],
        default=None,
        help="embed each request's sentences with a static query encoder trained "
        "on these data sets' tools (as the app does once one is built)",
    )
    parser.add_argument("--design", default="today", help="bench/_designs.py")
    parser.add_argument(
        "--whole-from-sentences",
        action="store_true",
        help="experiment: the mean of the sentence vectors as the request's vector",
    )
    args = parser.parse_args(argv)
    WHOLE_FROM_SENTENCES[0] = args.whole_from_sentences
    apply(args.design)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    cache = EmbeddingCache(get_embedder())
    default = EngineSettings().default_scorer
    names = DATASETS if args.data == "all" else (args.data,)
    if args.speed:
        from bench.quality_speed import run_speed

        run_speed(cache, args.limit)
        return
    print(
        f"embedding model: {cache.embedder.model_id}; default scorer: {default}; "
        f"design: {args.design}"
    )
    fast = static_encoder(args.static_from) if args.static_from else None
    for name in names:
        data = prepare(name, args.limit, cache)
        run_dataset(with_static_sentences(data, fast) if fast else data, default)


def static_encoder(source: str) -> StaticQueryEncoder:
    """An encoder trained on the tools of ``source`` (cached in the bench cache)."""
    onnx = local_onnx_encoder()
    names = DATASETS if source == "all" else (source,)
    path = CACHE_DIR / f"static-{'-'.join(names)}-{onnx.weights_digest[:12]}.npz"
    if not path.exists():
        tools = [
            ToolText(s.name, s.description, s.parameters)
            for name in names
            for s in load_specs(name)
        ]
        started = time.perf_counter()
        texts = training_texts(tools)
        weights = build_weights(texts, onnx, progress=print, tools=len(tools))
        save_weights(weights, path)
        print(f"trained on {len(tools)} tools in {time.perf_counter() - started:.0f} s")
    return load_encoder(path, onnx.tokenizer)


def with_static_sentences(data: Prepared, fast: StaticQueryEncoder) -> Prepared:
    """The data set with every request's sentences embedded by ``fast``."""
    vecs = [
        fast.encode_many(split_sentences(embed_text(q.text)))
        if len(data.sentence_vecs[i])
        else data.sentence_vecs[i]
        for i, q in enumerate(data.queries)
    ]
    return replace(data, sentence_vecs=vecs)


if __name__ == "__main__":
    main()
