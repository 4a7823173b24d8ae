"""A ranking nobody can buy: attacker tools added to each dev set's catalog.

    .venv/bin/python bench/attacks.py [--data metatool|sealtools|stabletoolbench|all]
        [--holdout fold|source] [--folds N] [--variant 1|2] [--limit N]
        [--design NAME[:VALUE]]

For each data set (shared/bench/data) the labelled dev requests are cut into a
training side and a held-out side (``--holdout fold``: each of 5 folds, fixed
seed, held out in turn, so every labelled request is held out once; ``source``:
whole request sources held out, see ``SOURCES``). Attacker tools
(bench/_attackers.py: promotional, imperative, keyword-stuffed, request-mirror
built from training requests only, hidden-instruction) are added to the catalog
and every held-out request is ranked by the real engine (top 10, min_score 0,
the semantic pool exactly as the app's) on the clean and on the attacked
catalog. It prints, per data set:

* ASR@1 / ASR@5: the share of held-out requests with an attacker ranked first /
  in the top 5, per kind and for any content attacker;
* NDCG@10 on the clean catalog and on the attacked one, and the loss;
* the chance level: how often 5 of the catalog's own honest tools, drawn at
  random among those a request does not want, would be first / in the top 5 of
  the clean ranking (what any newcomer with nothing to sell reaches; in a small
  catalog it is not far from the goal);
* each honest tool's own top-5 rate on requests that do not want it (median,
  90th percentile, largest), and each attacker's centrality (its mean cosine to
  the clean tools, as a percentile among theirs): how far an attacker stands
  from the catalog's own generic tools;
* which attackers, and what share of the clean tools, have more than ``SCREEN``
  times the catalog's median number of distinct words (what a length screen at
  import would hold; reported only);
* near-copies of the three most wanted tools (training side), in a catalog of
  their own: their ASR@1 / ASR@5, how often a copy outranks the tool it copies
  for a request that wants that tool, and the share caught by the near-copy lint
  (screening.near_copies) next to the share of the clean catalog's own tools it
  would hold (each checked against the others from other sources: a name
  family, StableToolBench's RapidAPI tool, stands for one source).

Goal (issue 43): ASR@1 <= 1%, ASR@5 <= 5% for the content attackers on every dev
set, NDCG@10 within 0.01 of the clean catalog. ``--design`` measures a ranking
design tried and not kept (bench/_designs.py; ``main``: the engine before). See
bench/README.md, "A ranking nobody can buy".
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import selection.engine.index as index_module  # noqa: E402
from bench._attackers import (  # noqa: E402
    CONTENT_KINDS,
    NEAR_COPY,
    STUFFED_WORDS,
    Attacker,
    content_attackers,
    most_wanted,
    near_copies,
)
from bench._data import (  # noqa: E402
    DATASETS,
    SOURCES,
    EmbeddingCache,
    get_embedder,
    tool_embedding_text,
)
from bench._designs import apply  # noqa: E402
from bench.quality import (  # noqa: E402
    Prepared,
    prepare,
    records_from_specs,
    semantic_pool,
)
from catalog.spec import ToolSpec  # noqa: E402
from learning.fit import folds_of  # noqa: E402
from learning.metrics import query_metrics  # noqa: E402
from screening.near_copies import NearCopyIndex  # noqa: E402
from selection.engine import CatalogSnapshot, SelectionRequest, select  # noqa: E402
from selection.engine.fusion import family_key  # noqa: E402
from selection.engine.vectors import VectorTable, unit_rows  # noqa: E402

FOLDS, SEED = 5, 20261206
GOAL_ASR1, GOAL_ASR5, GOAL_NDCG = 0.01, 0.05, 0.01
# An import screen's line for extreme length, in medians of distinct words
# (reported, not applied: the ranking does not screen).
SCREEN = 8


@dataclass(frozen=True)
class Split:
    """Rows of the labelled requests on each side."""

    training: list[int]
    held_out: list[int]


def splits(data: Prepared, holdout: str, folds: int) -> list[Split]:
    """Training and held-out rows of the labelled requests: each of the first
    ``folds`` folds held out in turn, or the held-out sources once."""
    rows = [i for i, q in enumerate(data.queries) if q.relevant]
    if holdout == "source":
        out = set(SOURCES[data.name])
        tests = [[i for i in rows if data.queries[i].subset in out]]
    else:
        fold = folds_of(len(data.queries), FOLDS, SEED)
        tests = [[i for i in rows if fold[i] == f] for f in range(folds)]
    found = []
    for test in tests:
        held = set(test)
        found.append(Split([i for i in rows if i not in held], test))
    return found


def with_tools(data: Prepared, extra: Sequence[ToolSpec], cache: EmbeddingCache):
    """The data set with ``extra`` tools appended to its catalog (their vectors
    embedded as the app would, the snapshot rebuilt with the same settings)."""
    if not extra:
        return data
    specs = [*data.specs, *extra]
    added = cache.get([tool_embedding_text(s) for s in extra])
    vectors = np.concatenate([data.tool_vecs, added])
    table = VectorTable(
        cache.embedder.model_id, unit_rows(vectors), np.ones(len(specs), bool)
    )
    snapshot = CatalogSnapshot(
        data.name,
        "attacked",
        records_from_specs(specs),
        settings=data.snapshot.settings,
        vectors=table,
    ).warm()
    return replace(data, specs=specs, snapshot=snapshot, tool_vecs=vectors)


def rankings(data: Prepared, rows: Sequence[int]) -> list[list[str]]:
    """The engine's top 10 (min_score 0) for each request row."""
    pool = data.snapshot.settings.candidate_pool
    out = []
    for i in rows:
        request = SelectionRequest(
            query=data.queries[i].text, max_candidates=10, min_score=0.0
        )
        result = select(data.snapshot, request, semantic=semantic_pool(data, i, pool))
        out.append(result.names)
    return out


def ndcg(data: Prepared, rows: Sequence[int], ranked: list[list[str]]) -> float:
    """Mean NDCG@10 of ``ranked`` over the request rows."""
    return float(
        np.mean(
            [
                query_metrics(names, data.queries[i].relevant)["NDCG@10"]
                for i, names in zip(rows, ranked, strict=True)
            ]
        )
    )


def chance(
    data: Prepared, rows: Sequence[int], ranked: list[list[str]], tools: int = 5
) -> tuple[float, float]:
    """What ``tools`` honest tools of the catalog, drawn at random among those a
    request does not want, would score as "attackers": the expected share of
    requests with one of them first / in the top 5 of the clean ranking."""
    first, top = [], []
    for i, names in zip(rows, ranked, strict=True):
        wanted = set(data.queries[i].relevant)
        pool = len(data.specs) - len(wanted)
        first.append(min(1.0, tools / pool) * (names[0] not in wanted))
        hits = sum(n not in wanted for n in names[:5])
        top.append(1.0 - math.comb(pool - hits, tools) / math.comb(pool, tools))
    return float(np.mean(first)), float(np.mean(top))


def honest_spread(
    data: Prepared, rows: Sequence[int], ranked: list[list[str]]
) -> tuple[float, float, float, str]:
    """Each honest tool's own "ASR@5": the share of held-out requests that do
    not want it with it in the clean top 5; the median, 90th percentile and
    largest over the catalog's tools, and the tool with the largest."""
    seen = dict.fromkeys((s.name for s in data.specs), 0)
    for i, names in zip(rows, ranked, strict=True):
        for name in names[:5]:
            if name not in data.queries[i].relevant:
                seen[name] += 1
    rates = np.array(list(seen.values()), dtype=np.float64) / max(len(rows), 1)
    top = max(seen, key=lambda n: (seen[n], n))
    median, p90 = np.percentile(rates, [50, 90])
    return float(median), float(p90), float(rates.max()), top


def centrality(data: Prepared, attacked: Prepared, names: set[str]) -> dict[str, float]:
    """Per attacker: the percentile, among the clean tools, of its mean cosine
    to the clean tools (a hub's is high: "everybody's second-best")."""
    clean = unit_rows(data.tool_vecs)
    vectors = unit_rows(attacked.tool_vecs)
    own = clean @ clean.T
    np.fill_diagonal(own, np.nan)
    honest = np.nanmean(own, axis=1)
    out = {}
    for row, spec in enumerate(attacked.specs):
        if spec.name in names:
            mean = float((clean @ vectors[row]).mean())
            out[spec.name] = float((honest < mean).mean())
    return out


def success(ranked: list[list[str]], kinds: dict[str, str], k: int) -> dict[str, float]:
    """Per attacker kind (and ``any``): the share of rankings with one of its
    tools in the top ``k``."""
    out = {}
    for kind in [*sorted(set(kinds.values())), "any"]:
        hits = [
            any(kinds.get(n) == kind or (kind == "any" and n in kinds) for n in r[:k])
            for r in ranked
        ]
        out[kind] = float(np.mean(hits)) if hits else 0.0
    return out


@dataclass
class Report:
    """One data set's numbers."""

    name: str
    held_out: int
    tools: int
    clean: float
    attacked: float
    asr1: dict[str, float]
    asr5: dict[str, float]
    chance: tuple[float, float]
    spread: tuple[float, float, float, str]
    hubs: dict[str, float]
    screened: tuple[list[str], float]
    copies: dict[str, float]


def copy_report(
    data: Prepared,
    rows: Sequence[int],
    attackers: list[Attacker],
    clean: list[list[str]],
    cache: EmbeddingCache,
) -> dict[str, float]:
    """Near-copies in a catalog of their own: ASR, copies over their originals,
    the lint's catch rate and the share of clean tools it would hold."""
    attacked = with_tools(data, [a.spec for a in attackers], cache)
    ranked = rankings(attacked, rows)
    kinds = {a.spec.name: NEAR_COPY for a in attackers}
    original = {a.spec.name: a.copies for a in attackers}
    wanted = [
        (r, data.queries[i].relevant)
        for r, i in zip(ranked, rows, strict=True)
        if set(original.values()) & set(data.queries[i].relevant)
    ]
    above = [
        any(
            n in original and original[n] in relevant and original[n] not in r[:j]
            for j, n in enumerate(r)
        )
        for r, relevant in wanted
    ]
    origin = [source_of(s.name) for s in data.specs]
    lint = NearCopyIndex(data.specs, origin)
    caught = [bool(lint.near(a.spec, source="attacker")) for a in attackers]
    held = [bool(lint.near(s, o)) for s, o in zip(data.specs, origin, strict=True)]
    return {
        "asr1": success(ranked, kinds, 1)["any"],
        "asr5": success(ranked, kinds, 5)["any"],
        "above_original": float(np.mean(above)) if above else 0.0,
        "wanting": len(wanted),
        "caught": float(np.mean(caught)),
        "clean_held": float(np.mean(held)),
        "ndcg": ndcg(data, rows, ranked) - ndcg(data, rows, clean),
    }


def run(
    name: str, args: argparse.Namespace, cache: EmbeddingCache
) -> tuple[Report, list[Attacker]]:
    """Every measurement of one data set, over its held-out splits."""
    data = prepare(name, args.limit, cache)
    rows, clean, attacked, kinds = [], [], [], {}
    screened: set[str] = set()
    hubs: dict[str, list[float]] = {}
    copied: list[dict[str, float]] = []
    for side in splits(data, args.holdout, args.folds):
        training = [data.queries[i].text for i in side.training]
        attackers = content_attackers(
            data.specs, training, args.variant, stuffed_words(data, args.variant)
        )
        kinds.update({a.spec.name: a.kind for a in attackers})
        clean_here = rankings(data, side.held_out)
        extra = [a.spec for a in attackers]
        with_attackers = with_tools(data, extra, cache)
        attacked += rankings(with_attackers, side.held_out)
        screened.update(long_texts(with_attackers))
        central = centrality(data, with_attackers, {a.spec.name for a in attackers})
        for a in attackers:
            hubs.setdefault(a.kind, []).append(central[a.spec.name])
        rows += side.held_out
        clean += clean_here
        popular = most_wanted([data.queries[i].relevant for i in side.training])
        copies = near_copies(data.specs, popular, args.variant)
        found = copy_report(data, side.held_out, copies, clean_here, cache)
        copied.append({**found, "weight": len(side.held_out)})
    report = Report(
        name=name,
        held_out=len(rows),
        tools=len(data.specs),
        clean=ndcg(data, rows, clean),
        attacked=ndcg(data, rows, attacked),
        asr1=success(attacked, kinds, 1),
        asr5=success(attacked, kinds, 5),
        chance=chance(data, rows, clean),
        spread=honest_spread(data, rows, clean),
        hubs={kind: float(np.mean(found)) for kind, found in hubs.items()},
        screened=(
            sorted({kinds[n] for n in screened if n in kinds}),
            len(screened - set(kinds)) / len(data.specs),
        ),
        copies=_pooled(copied),
    )
    return report, attackers


def long_texts(data: Prepared) -> set[str]:
    """Tools with more than ``SCREEN`` times the catalog's median number of
    distinct words (what an import screen for extreme length would hold)."""
    index = data.snapshot.index
    sizes = np.bincount(index.fields["overlap_examples"].docs, minlength=index.n_docs)
    rows = np.flatnonzero(sizes > SCREEN * index.overlap_norm)
    return {data.specs[int(r)].name for r in rows}


def source_of(name: str) -> str:
    """A clean tool's source as the lint sees it: the API a name family comes
    from (StableToolBench's RapidAPI tools), else the tool alone."""
    return family_key(name) or name


def stuffed_words(data: Prepared, variant: int) -> int:
    """Wording 1 lists ``STUFFED_WORDS`` frequent words; wording 2 knows the
    engine's rule and lists just as many as still earn full credit (the knee
    times the catalog's median number of distinct words)."""
    knee = index_module.LONG_TEXT_KNEE  # as --design left it
    if variant == 1 or not math.isfinite(knee):
        return STUFFED_WORDS
    return int(knee * data.snapshot.index.overlap_norm)


def _pooled(parts: list[dict[str, float]]) -> dict[str, float]:
    """The near-copy numbers of several splits, weighted by held-out requests
    (counts summed; the lint's rates are the same tools in every split)."""
    total = sum(p["weight"] for p in parts)
    out = {k: sum(p[k] * p["weight"] for p in parts) / total for k in parts[0]}
    out["wanting"] = sum(p["wanting"] for p in parts)
    wanting = out["wanting"] or 1
    out["above_original"] = sum(p["above_original"] * p["wanting"] for p in parts)
    out["above_original"] /= wanting
    return out


def print_reports(reports: list[Report], args: argparse.Namespace) -> None:
    """The table: one block per data set, one row per attacker kind."""
    print(
        f"\ndesign {args.design}; held out by {args.holdout}, "
        f"attacker wording {args.variant}; "
        "top 10 at min_score 0; goal ASR@1 <= 1%, ASR@5 <= 5%, NDCG@10 loss <= 0.01"
    )
    header = f"{'set':<17}{'attacker':<20}{'ASR@1':>8}{'ASR@5':>8}"
    print(header + f"{'NDCG@10 clean':>15}{'attacked':>10}{'loss':>8}  goal")
    for r in reports:
        for kind in [*CONTENT_KINDS, "any"]:
            label = "all content" if kind == "any" else kind
            line = f"{r.name:<17}{label:<20}"
            line += f"{r.asr1.get(kind, 0):>8.1%}{r.asr5.get(kind, 0):>8.1%}"
            if kind == "any":
                loss = r.clean - r.attacked
                met = (
                    r.asr1["any"] <= GOAL_ASR1
                    and r.asr5["any"] <= GOAL_ASR5
                    and loss <= GOAL_NDCG
                )
                line += f"{r.clean:>15.4f}{r.attacked:>10.4f}{loss:>8.4f}  "
                line += "met" if met else "MISSED"
            print(line)
        line = f"{r.name:<17}{'chance: 5 honest':<20}"
        print(line + f"{r.chance[0]:>8.1%}{r.chance[1]:>8.1%}")
        median, p90, most, top = r.spread
        print(
            f"{'':<17}each honest tool in the top 5 of requests not wanting it: "
            f"median {median:.1%}, p90 {p90:.1%}, most {most:.1%} ({top})"
        )
        hubs = ", ".join(f"{k} {v:.0%}" for k, v in r.hubs.items())
        print(f"{'':<17}centrality percentile among the clean tools: {hubs}")
        print(f"{'':<17}({r.held_out} held-out requests, {r.tools} clean tools)")
        kinds, share = r.screened
        print(
            f"{'':<17}past {SCREEN}x the median distinct words (an import screen, "
            f"not applied): {', '.join(kinds) or 'no attacker'}; "
            f"{share:.1%} of the clean tools"
        )
    print(
        "\nnear-copies of the 3 most wanted tools (a catalog of their own): ASR, "
        "a copy above its original\nfor requests wanting it, NDCG@10 change, and "
        "the near-copy lint (screening.near_copies)"
    )
    print(
        f"{'set':<17}{'ASR@1':>8}{'ASR@5':>8}{'above original':>16}{'NDCG@10':>9}"
        f"{'lint caught':>13}{'clean tools held':>18}"
    )
    for r in reports:
        c = r.copies
        print(
            f"{r.name:<17}{c['asr1']:>8.1%}{c['asr5']:>8.1%}"
            f"{c['above_original']:>9.1%} of {int(c['wanting']):<4}{c['ndcg']:>+9.4f}"
            f"{c['caught']:>13.0%}{c['clean_held']:>18.1%}"
        )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", choices=[*DATASETS, "all"], default="all")
    parser.add_argument("--holdout", choices=("fold", "source"), default="fold")
    parser.add_argument("--variant", type=int, choices=(1, 2), default=1)
    parser.add_argument("--limit", type=int, default=None, help="first N requests")
    parser.add_argument(
        "--folds", type=int, default=FOLDS, help="held-out folds to run (fold)"
    )
    parser.add_argument(
        "--show", action="store_true", help="print each attacker's description"
    )
    parser.add_argument("--design", default="today", help="bench/_designs.py")
    args = parser.parse_args(argv)
    apply(args.design)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    cache = EmbeddingCache(get_embedder())
    names = DATASETS if args.data == "all" else (args.data,)
    reports = []
    started = time.perf_counter()
    for name in names:
        report, attackers = run(name, args, cache)
        reports.append(report)
        if args.show:
            for a in attackers:
                print(f"{name} {a.kind} {a.spec.name}: {a.spec.description[:300]!r}")
        print(f"{name}: done ({time.perf_counter() - started:.0f} s)", flush=True)
    print_reports(reports, args)


if __name__ == "__main__":
    main()
