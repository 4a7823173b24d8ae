"""The demo catalog's everyday requests: the tool the engine offers first for each.

The demo catalog (``catalog/demo/demo_catalog.json``) is what ``make run`` loads
and what the README's tour asks. Its tools are embedded by the bundled MiniLM in
process, as the app holds the vectors of a catalog this size, and each request
gets the semantic pool the app computes; no database. Every request asks for
the ranking as an admin's Try it does (unsafe tools included, ``min_score`` 0).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from catalog.coherence import dispersed_descriptions
from catalog.embedding_text import embedding_text
from catalog.spec import spec_from_dict
from embeddings.backends import LocalMiniLMBackend, get_local_backend
from selection.engine import (
    CatalogSnapshot,
    SelectionRequest,
    SelectionResult,
    record_from_dict,
    select,
)
from selection.engine.index import EXAMPLE_SHARE
from selection.engine.normalize import normalize
from selection.engine.sentences import split_sentences
from selection.engine.vectors import VectorTable, unit_rows

DEMO_PATH = Path(__file__).resolve().parents[3] / "catalog/demo/demo_catalog.json"
HEADLINE = "email the quarterly report to Dana"

# Everyday requests a newcomer types, each with the tool it wants first, and the
# known misses with the rank each is held to (why: in the file).
REQUESTS = json.loads(
    (Path(__file__).resolve().parents[2] / "data/demo_requests.json").read_text()
)
EVERYDAY = [(r["request"], r["first"]) for r in REQUESTS["everyday"]]
KNOWN_MISSES = [
    (r["request"], r["wanted"], r["within"]) for r in REQUESTS["known_misses"]
]


@dataclass(frozen=True)
class Demo:
    snapshot: CatalogSnapshot
    table: VectorTable
    backend: LocalMiniLMBackend

    def ask(self, text: str) -> SelectionResult:
        """The ranking for ``text``, the semantic pool as the app computes it."""
        request = SelectionRequest(
            query=text, max_candidates=5, min_score=0.0, allow_unsafe=True
        )
        embed = normalize(request).embed_text
        vector = self.backend.embed_query(embed)
        parts = split_sentences(embed)
        sentences = np.zeros((len(parts), len(vector)), dtype=np.float32)
        for at, part in enumerate(parts):
            sentences[at] = self.backend.embed_query(part)
        pool_size = self.snapshot.settings.candidate_pool
        rows = self.table.nearest_mixed(vector, sentences, pool_size)
        pool = self.snapshot.named_pool(rows)
        return select(self.snapshot, request, semantic=pool, vector=vector)


def build_demo() -> Demo:
    """The demo catalog embedded and indexed as the app holds it (bench/examples.py
    ranks the same requests with it)."""
    data = json.loads(DEMO_PATH.read_text(encoding="utf-8"))
    specs = [spec_from_dict(tool) for tool in data["tools"]]
    backend = get_local_backend()
    dispersed = dispersed_descriptions(
        [spec.description for spec in specs], backend.embed_documents
    )
    texts = [
        embedding_text(s, dispersed=d) for s, d in zip(specs, dispersed, strict=True)
    ]
    vectors = backend.embed_documents(texts)
    table = VectorTable(backend.model_id, unit_rows(vectors), np.ones(len(specs), bool))
    records = tuple(
        record_from_dict(spec.to_dict(), row, row) for row, spec in enumerate(specs)
    )
    snapshot = CatalogSnapshot("default", "1", records, vectors=table).warm()
    return Demo(snapshot, table, backend)


@pytest.fixture(scope="module")
def demo() -> Demo:
    return build_demo()


@pytest.mark.parametrize(("text", "expected"), EVERYDAY)
def test_an_everyday_request_offers_its_tool_first(
    demo: Demo, text: str, expected: str
) -> None:
    assert demo.ask(text).names[0] == expected


@pytest.mark.parametrize(("text", "expected", "rank"), KNOWN_MISSES)
def test_a_known_miss_still_offers_its_tool_near_the_top(
    demo: Demo, text: str, expected: str, rank: int
) -> None:
    assert expected in demo.ask(text).names[:rank]


def test_the_headline_request_counts_the_example_and_not_its_recipient(
    demo: Demo,
) -> None:
    answer = demo.ask(HEADLINE)
    first, second = answer.tools[0], answer.tools[1]
    assert (first.name, second.name) == ("send_email", "run_saved_report")
    # send_email's example "email the Q3 report to finance@acme.com" adds
    # "report" (at half a description word) to "email"; "Dana", named only in
    # other tools' examples, counts for none of them.
    assert first.signals["lexical"] == pytest.approx((1 + EXAMPLE_SHARE) / 4)
    assert second.signals["lexical"] == pytest.approx(1 / 4)
    terms = normalize(SelectionRequest(query=HEADLINE)).terms
    assert terms.keys() >= {"email", "report", "dana"}
    index = demo.snapshot.index
    assert not index.described[index.vocab["dana"]]
