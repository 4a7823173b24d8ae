"""The learnt signal's request path (no database): above EXACT_EXAMPLES labelled
requests a request reads the clusters of its nearest ones instead of every one,
and the engine then ranks exactly as it does when every labelled request is
scanned; learning.fit's path still scans them all, and a request computes only
the signals that have a weight."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from learning.fit import Labelled, build_signal
from selection.engine import SelectionRequest, select
from selection.engine import learnt as learnt_module
from selection.engine.normalize import normalize
from tests.selection.engine.helpers import snapshot, tools

DIM = 32
TOPICS = 60
PER_TOPIC = 40  # 2,400 labelled requests, above EXACT_EXAMPLES


def catalog_tools():
    """The helpers' five tools plus one per topic, which no request names."""
    base = tools()
    extra = [
        replace(
            base[0],
            id=100 + t,
            name=f"tool_{t:02d}",
            title=f"Tool {t}",
            description="An internal operation.",
            category=f"c{t % 7}",
            tags=(),
            keywords=(),
            position=len(base) + t,
        )
        for t in range(TOPICS)
    ]
    return base + tuple(extra)


def centres() -> np.ndarray:
    rng = np.random.default_rng(3)
    out = rng.normal(size=(TOPICS, DIM))
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def unit(v: np.ndarray) -> np.ndarray:
    return (v / np.linalg.norm(v)).astype(np.float32)


def labels(names: list[str]) -> list[Labelled]:
    """PER_TOPIC requests near each topic (nearer it than any other topic),
    naming that topic's tool."""
    rng = np.random.default_rng(5)
    out = []
    for t, centre in enumerate(centres()):
        for i in range(PER_TOPIC):
            text = f"zorp blarg {t} request {i}"
            vector = unit(centre + 0.08 * rng.normal(size=DIM))
            terms = normalize(SelectionRequest(query=text)).terms
            out.append(Labelled(vector, terms, text, (names.index(f"tool_{t:02d}"),)))
    return out


def signal(names: list[str], exact_up_to: int | None = None):
    weights = {"knn": 2.0, "expansion": 0.5}
    if exact_up_to is None:
        return build_signal("t:1", "", names, labels(names), weights, 10).warm()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(learnt_module, "EXACT_EXAMPLES", exact_up_to)
        return build_signal("t:1", "", names, labels(names), weights, 10).warm()


def requests(count: int) -> list[tuple[str, np.ndarray]]:
    """Held-out requests near the topics (never one of the labels)."""
    rng = np.random.default_rng(7)
    out = []
    for j in range(count):
        t = j % TOPICS
        vector = unit(centres()[t] + 0.08 * rng.normal(size=DIM))
        out.append(("please zorp the blarg", vector))
    return out


def test_the_engine_ranks_the_same_through_the_clusters_as_through_every_example():
    snap = snapshot()
    snap = replace(snap, tools=catalog_tools())
    names = [t.name for t in snap.tools]
    clustered = signal(names)
    scanned = signal(names, exact_up_to=10**9)
    assert clustered.nearest_index is not None
    assert scanned.nearest_index is None
    with_clusters = replace(snap, learnt=clustered).warm()
    with_scan = replace(snap, learnt=scanned).warm()
    # The tools' own vectors are far from their requests: labels have to help.
    rng = np.random.default_rng(11)
    tool_vectors = {
        f"tool_{t:02d}": unit(c + 0.3 * rng.normal(size=DIM))
        for t, c in enumerate(centres())
    }
    changed_by_learning = 0
    for text, vector in requests(120):
        semantic = {n: float(v @ vector) for n, v in tool_vectors.items()}
        request = SelectionRequest(query=text, max_candidates=5, min_score=0)
        a = select(with_clusters, request, semantic=semantic, vector=vector)
        b = select(with_scan, request, semantic=semantic, vector=vector)
        assert a.names == b.names
        assert [p.score for p in a.tools] == [p.score for p in b.tools]
        assert [(e.name, e.detail) for e in a.excluded] == [
            (e.name, e.detail) for e in b.excluded
        ]
        plain = select(snap, request, semantic=semantic)
        changed_by_learning += plain.names != a.names
    assert changed_by_learning > 0, "the learnt signal moved some ranking"


def test_the_clusters_find_an_example_itself_first():
    names = [t.name for t in catalog_tools()]
    sig = signal(names)
    index = sig.nearest_index
    examples = sig.built.tool_examples
    for position in range(0, len(examples), 97):
        found, sims = index.nearest(examples[position], 1)
        assert int(found[0]) == position
        assert sims[0] == pytest.approx(1.0, abs=1e-5)


def test_the_clusters_cosines_are_the_exact_ones_of_the_examples_they_return():
    names = [t.name for t in catalog_tools()]
    sig = signal(names)
    for _, vector in requests(10):
        found, sims = sig.nearest_index.nearest(vector, 10)
        assert len(set(found.tolist())) == 10
        exact = sig.built.tool_examples[found] @ vector
        assert np.allclose(sims, exact, atol=1e-6)


def test_the_fit_path_scans_every_example():
    names = [t.name for t in catalog_tools()]
    sig = signal(names)
    everything = sig.built.tool_examples
    for _, vector in requests(6):
        found = sig.scores(vector, {})["knn"]
        sims = everything @ vector
        top = np.argsort(-sims)[:10]
        expected = np.zeros(len(names))
        for i in top:
            for row in sig.example_tools[int(sig.built.with_tools[i])]:
                expected[row] = max(expected[row], float(sims[i]), 0.0)
        assert np.allclose(found, expected, atol=1e-6)


def test_a_request_computes_only_the_signals_with_a_weight():
    names = [t.name for t in catalog_tools()]
    sig = signal(names).with_weights({"expansion": 1.0, "knn": 0.0}, 10)
    text, vector = requests(1)[0]
    terms = normalize(SelectionRequest(query=text)).terms
    assert set(sig.request_scores(vector, terms)) == {"expansion"}
    assert set(sig.scores(vector, terms)) == {"knn", "expansion", "centroid"}


def test_a_small_catalog_of_labels_is_scanned_whole():
    names = [t.name for t in catalog_tools()]
    few = labels(names)[: learnt_module.EXACT_EXAMPLES // 2]
    sig = build_signal("t:1", "", names, few, {"knn": 1.0}, 10)
    assert sig.nearest_index is None


def test_warming_the_snapshot_builds_the_clusters():
    names = [t.name for t in catalog_tools()]
    sig = build_signal("t:1", "", names, labels(names), {"knn": 1.0}, 10)
    assert "nearest_index" not in sig.__dict__
    replace(snapshot(), tools=catalog_tools(), learnt=sig).warm()
    assert sig.__dict__["nearest_index"] is not None
