"""The metrics are shared/bench/README.md's, on hand-worked rankings."""

from __future__ import annotations

import math

import pytest

from learning.metrics import mean_metrics, query_metrics


def test_a_relevant_tool_first_scores_one_everywhere():
    assert query_metrics(["a", "b"], ["a"]) == {
        "R@1": 1.0,
        "R@3": 1.0,
        "R@5": 1.0,
        "R@10": 1.0,
        "NDCG@10": 1.0,
        "MRR": 1.0,
    }


def test_two_relevant_tools_at_ranks_two_and_eleven():
    ranked = ["x", "a", *[f"y{i}" for i in range(8)], "b"]
    got = query_metrics(ranked, ["a", "b"])
    ideal = 1 + 1 / math.log2(3)
    assert got["R@1"] == 0 and got["R@3"] == 0.5 and got["R@10"] == 0.5
    assert got["NDCG@10"] == pytest.approx((1 / math.log2(3)) / ideal)
    assert got["MRR"] == 0.5


def test_a_ranking_without_the_relevant_tool_scores_zero():
    assert query_metrics(["x"], ["a"])["MRR"] == 0.0


def test_no_relevant_tool_is_refused_rather_than_divided_by_zero():
    with pytest.raises(ValueError, match="relevant"):
        query_metrics(["x"], [])


def test_means_are_per_metric():
    assert mean_metrics([{"MRR": 1.0}, {"MRR": 0.0}]) == {"MRR": 0.5}
    assert mean_metrics([]) == {}
