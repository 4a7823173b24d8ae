"""Geometry of the evaluation chart, drawn by the template as inline SVG (no
script, no chart library; like compliance.charts): one line per metric over the
catalog's finished runs, oldest on the left, 0..1 on the vertical axis."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from learning.models import Evaluation

WIDTH, HEIGHT = 720, 200
LEFT, BOTTOM, TOP_PAD, RIGHT = 40, 24, 10, 12
LINES = (("NDCG@10", "ndcg"), ("R@3", "r3"), ("MRR", "mrr"))


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    run: int
    value: float


@dataclass(frozen=True)
class Line:
    metric: str
    css: str
    points: tuple[Point, ...]

    @property
    def path(self) -> str:
        return " ".join(f"{p.x:.1f},{p.y:.1f}" for p in self.points)


@dataclass(frozen=True)
class RunChart:
    width: int
    height: int
    left: int
    base: float
    lines: tuple[Line, ...]
    grid: tuple[tuple[float, str], ...]
    labels: tuple[tuple[float, str], ...]  # x, run id under the axis


def run_chart(runs: Sequence[Evaluation]) -> RunChart | None:
    """The chart of ``runs`` (oldest first) that have metrics; None for none."""
    runs = [r for r in runs if r.metrics.get("NDCG@10") is not None]
    if not runs:
        return None
    base = HEIGHT - BOTTOM
    span = base - TOP_PAD
    step = (WIDTH - LEFT - RIGHT) / max(len(runs) - 1, 1)

    def x(i: int) -> float:
        return LEFT + (i * step if len(runs) > 1 else (WIDTH - LEFT - RIGHT) / 2)

    lines = tuple(
        Line(
            metric,
            css,
            tuple(
                Point(
                    x(i),
                    base - span * float(r.metrics[metric]),
                    r.pk,
                    float(r.metrics[metric]),
                )
                for i, r in enumerate(runs)
            ),
        )  # fmt: skip
        for metric, css in LINES
    )
    grid = tuple((base - span * v, f"{v:.2f}") for v in (0.0, 0.25, 0.5, 0.75, 1.0))
    every = max(1, len(runs) // 8)
    labels = tuple((x(i), f"#{r.pk}") for i, r in enumerate(runs) if i % every == 0)
    return RunChart(WIDTH, HEIGHT, LEFT, base, lines, grid, labels)
