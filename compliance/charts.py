"""Geometry of the dashboard's charts, drawn by the templates as inline SVG (no
script, no chart library): a column chart over time and horizontal bars whose
length is a share of the longest. Pure functions over counts already aggregated."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from compliance.dashboard import Bucket, Count

WIDTH, HEIGHT = 720, 220
# Room for the count axis on the left and the time labels below.
LEFT, BOTTOM, TOP_PAD = 44, 28, 8
MAX_TICKS = 8


@dataclass(frozen=True)
class Column:
    x: float
    y: float
    width: float
    height: float
    bucket: Bucket
    tick: bool  # its time is written under the axis


@dataclass(frozen=True)
class Gridline:
    y: float
    value: str


@dataclass(frozen=True)
class ColumnChart:
    width: int
    height: int
    left: int
    base: float  # the y of the time axis
    columns: list[Column]
    gridlines: list[Gridline]
    peak: Bucket | None


def nice_ceiling(value: int) -> int:
    """The smallest of 1, 2, 5 x 10^n at least ``value`` (at least 1)."""
    if value <= 1:
        return 1
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if step * power >= value:
            return step * power
    return 10 * power  # pragma: no cover (the loop always returns)


def column_chart(buckets: Sequence[Bucket]) -> ColumnChart:
    """Columns for ``buckets`` in a WIDTH x HEIGHT box, a count axis of three
    gridlines, and about MAX_TICKS time labels."""
    base = HEIGHT - BOTTOM
    room = base - TOP_PAD
    top = nice_ceiling(max((b.count for b in buckets), default=0))
    slot = (WIDTH - LEFT) / max(len(buckets), 1)
    every = max(1, math.ceil(len(buckets) / MAX_TICKS))
    columns = []
    for index, bucket in enumerate(buckets):
        height = room * bucket.count / top
        columns.append(
            Column(
                x=round(LEFT + index * slot + slot * 0.1, 2),
                y=round(base - height, 2),
                width=round(slot * 0.8, 2),
                height=round(height, 2),
                bucket=bucket,
                tick=index % every == 0,
            )
        )
    gridlines = [
        Gridline(round(base - room * share, 2), f"{top * share:g}")
        for share in (0.0, 0.5, 1.0)
    ]
    busy = [b for b in buckets if b.count]
    peak = max(busy, key=lambda b: b.count) if busy else None
    return ColumnChart(WIDTH, HEIGHT, LEFT, base, columns, gridlines, peak)


@dataclass(frozen=True)
class Bar:
    label: str
    count: int
    percent: float  # of the longest bar
    words: str = ""  # the label in plain words, when it is a code


def bars(
    counts: Sequence[Count], words: Callable[[str], str] | None = None
) -> list[Bar]:
    """Each count with its length as a share of the largest."""
    longest = max((c.count for c in counts), default=0) or 1
    return [
        Bar(
            c.label,
            c.count,
            round(100 * c.count / longest, 1),
            words(c.label) if words else "",
        )
        for c in counts
    ]
