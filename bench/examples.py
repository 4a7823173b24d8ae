"""The headline request and what tools' examples buy: the demo catalog's everyday
requests, and the dev sets with training requests standing in for examples.

    .venv/bin/python bench/examples.py [--design NAME[:VALUE]] [--skip-demo]
        [--data metatool|sealtools|stabletoolbench|all] [--folds N] [--per-tool 2]

1. **The demo catalog** (``catalog/demo/demo_catalog.json``, what ``make run``
   loads): each everyday request of ``tests/data/demo_requests.json`` ranked as
   Try it ranks it for an admin (in process, the bundled MiniLM, unsafe tools
   included, min_score 0), with the rank of the tool it wants, the tool ranked
   first and both scores; then the headline request's signals per tool.
2. **Examples on the dev sets.** The dev sets' tools have no examples, so a
   change to how examples count cannot move them. To see what examples buy where
   they exist, each tool gets up to ``--per-tool`` requests of the training side
   (single-tool requests under 200 characters, labelled with it) as its examples,
   is embedded again (the embedding text includes examples), and the held-out
   fold's requests are ranked with and without them (each of ``--folds`` folds
   held out in turn).

``--design`` (bench/_designs.py) measures a way of counting examples tried and
not kept: ``main`` (before this session), ``example-share:1`` (in full), or
``every-example-word`` (names and places too). See bench/README.md, "The
headline request".
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._data import (  # noqa: E402
    DATASETS,
    EmbeddingCache,
    get_embedder,
    tool_embedding_text,
)
from bench._designs import apply  # noqa: E402
from bench.attacks import ndcg, rankings, splits  # noqa: E402
from bench.quality import Prepared, prepare, records_from_specs  # noqa: E402
from selection.engine import CatalogSnapshot  # noqa: E402
from selection.engine.vectors import VectorTable, unit_rows  # noqa: E402
from tests.selection.engine.test_demo_requests import (  # noqa: E402
    HEADLINE,
    REQUESTS,
    build_demo,
)

SHOWN = ("embed", "lexical", "bm25f", "name", "confidence")


def demo_table() -> None:
    """Every everyday request and known miss: where its tool ranks."""
    demo = build_demo()
    wanted = [(r["request"], r["first"]) for r in REQUESTS["everyday"]]
    wanted += [(r["request"], r["wanted"]) for r in REQUESTS["known_misses"]]
    wrong = 0
    print(f"{'request':<52}{'wants':<22}{'rank':>5}  {'first (score)':<34}wanted")
    for text, tool in wanted:
        answer = demo.ask(text)
        names = answer.names
        rank = names.index(tool) + 1 if tool in names else None
        wrong += rank != 1
        first = f"{names[0]} ({answer.tools[0].score:.3f})"
        score = f"{answer.tools[rank - 1].score:.3f}" if rank else "-"
        print(f"{text[:51]:<52}{tool:<22}{rank or '>5':>5}  {first:<34}{score}")
    print(f"wrong first: {wrong} of {len(wanted)}")
    print(f"\n{HEADLINE!r}: signals of the first five")
    for pick in demo.ask(HEADLINE).tools:
        cells = " ".join(f"{k} {pick.signals.get(k, 0):.3f}" for k in SHOWN)
        print(f"  {pick.name:<22} {pick.score:.4f}  {cells}")


def with_examples(
    data: Prepared, training: Sequence[int], per_tool: int, cache: EmbeddingCache
) -> Prepared:
    """The data set whose tools hold training requests as examples."""
    rng = random.Random(7)
    found: dict[str, list[str]] = {}
    for i in training:
        query = data.queries[i]
        if len(query.relevant) == 1 and len(query.text) < 200:
            found.setdefault(query.relevant[0], []).append(query.text)
    specs = [
        replace(
            s, examples=rng.sample(found[s.name], min(per_tool, len(found[s.name])))
        )
        if s.name in found
        else s
        for s in data.specs
    ]
    vectors = cache.get([tool_embedding_text(s) for s in specs])
    table = VectorTable(
        cache.embedder.model_id, unit_rows(vectors), np.ones(len(specs), bool)
    )
    snapshot = CatalogSnapshot(
        data.name, "examples", records_from_specs(specs), vectors=table
    ).warm()
    return replace(data, specs=specs, snapshot=snapshot, tool_vecs=vectors)


def examples_table(args: argparse.Namespace, cache: EmbeddingCache) -> None:
    """Held-out NDCG@10 without and with training requests as examples."""
    names = DATASETS if args.data == "all" else (args.data,)
    head = f"\n{'set':<17}{'tools with examples':>20}{'held out':>10}"
    print(head + f"{'none':>9}{'with':>9}")
    for name in names:
        data = prepare(name, None, cache)
        rows: list[int] = []
        plain: list[list[str]] = []
        given: list[list[str]] = []
        tools = 0
        for side in splits(data, "fold", args.folds):
            example = with_examples(data, side.training, args.per_tool, cache)
            tools += sum(bool(s.examples) for s in example.specs)
            rows += side.held_out
            plain += rankings(data, side.held_out)
            given += rankings(example, side.held_out)
        print(
            f"{name:<17}{tools / args.folds:>20.0f}{len(rows):>10}"
            f"{ndcg(data, rows, plain):>9.4f}{ndcg(data, rows, given):>9.4f}",
            flush=True,
        )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--design", default="today", help="bench/_designs.py")
    parser.add_argument("--skip-demo", action="store_true")
    parser.add_argument("--data", choices=[*DATASETS, "all", "none"], default="all")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--per-tool", type=int, default=2)
    args = parser.parse_args(argv)
    apply(args.design)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    print(f"design {args.design}")
    if not args.skip_demo:
        demo_table()
    if args.data != "none":
        examples_table(args, EmbeddingCache(get_embedder()))


if __name__ == "__main__":
    main()
