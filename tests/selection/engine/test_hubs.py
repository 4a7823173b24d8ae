"""A tool whose vector sits near every other tool's loses semantic credit, and
only past the catalog's 99th percentile of that closeness. No Django."""

from __future__ import annotations

import numpy as np

from selection.engine import CatalogSnapshot, SelectionRequest, ToolRecord, select
from selection.engine.vectors import HUB_LINE, VectorTable, unit_rows

HONEST = 150
HUB = HONEST  # the last row


def catalog_vectors() -> np.ndarray:
    """Honest tools pointing their own ways, and one hub at their centroid."""
    honest = np.random.default_rng(7).normal(size=(HONEST, 64))
    honest = unit_rows(honest)
    return unit_rows(np.vstack([honest, honest.mean(axis=0, keepdims=True)]))


def table() -> VectorTable:
    rows = catalog_vectors()
    return VectorTable.build("test", rows.shape[1], len(rows), dict(enumerate(rows)))


def snapshot(vectors: VectorTable | None) -> CatalogSnapshot:
    records = tuple(
        ToolRecord(id=i, name=f"tool_{i}", description="does one thing", position=i)
        for i in range(HONEST + 1)
    )
    return CatalogSnapshot("test", "1", records, vectors=vectors)


def test_only_tools_past_the_99th_percentile_of_centrality_lose_anything() -> None:
    excess = table().hub_excess
    rows = catalog_vectors().astype(np.float64)
    cos = rows @ rows.T
    np.fill_diagonal(cos, np.nan)
    mean = np.nanmean(cos, axis=1)
    line = np.percentile(mean, HUB_LINE)
    assert np.all(excess[mean <= line] == 0)
    assert np.allclose(excess[mean > line], mean[mean > line] - line, atol=1e-5)
    assert int(np.argmax(excess)) == HUB
    assert np.count_nonzero(excess) <= np.ceil(len(rows) * (100 - HUB_LINE) / 100)


def test_the_most_central_tool_is_ranked_under_an_honest_tool_it_barely_beat() -> None:
    request = SelectionRequest(query="zq", max_candidates=2, min_score=0.0)
    pool = {f"tool_{HUB}": 0.50, "tool_3": 0.46}
    ranked = select(snapshot(table()), request, semantic=pool)
    assert [t.name for t in ranked.tools] == ["tool_3", f"tool_{HUB}"]
    honest, hub = ranked.tools
    assert hub.signals["hub"] < 0
    assert "close to every tool" in hub.reason
    assert "hub" not in honest.signals  # only the tools that lost anything


def test_a_snapshot_without_its_vectors_ranks_by_the_cosine_alone() -> None:
    request = SelectionRequest(query="zq", max_candidates=2, min_score=0.0)
    pool = {f"tool_{HUB}": 0.50, "tool_3": 0.46}
    ranked = select(snapshot(None), request, semantic=pool)
    assert [t.name for t in ranked.tools] == [f"tool_{HUB}", "tool_3"]
