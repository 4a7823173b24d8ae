"""What every scorer receives and returns.

Scores are dense numpy arrays over the snapshot's rows (0..1, 0 = no evidence) so
scorers can be stacked (the ensemble reuses the hybrid, the LLM scorer the
hybrid's shortlist) and the engine can rank, cut and explain them uniformly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from selection.engine.deadline import Deadline
from selection.engine.normalize import NormalizedQuery
from selection.engine.snapshot import CatalogSnapshot
from selection.engine.types import SelectionRequest

LLM = Callable[[str], str]


@dataclass
class ScoreContext:
    """Inputs shared by the scorers of one request."""

    snapshot: CatalogSnapshot
    query: NormalizedQuery
    request: SelectionRequest
    allowed: np.ndarray
    deadline: Deadline
    semantic: Mapping[str, float] | None = None
    llm: LLM | None = None
    # The request's unit vector (for the learnt signal), when the caller has it.
    vector: np.ndarray | None = None
    cache: dict[str, Any] = field(default_factory=dict)

    @property
    def n(self) -> int:
        """Number of tools in the snapshot."""
        return len(self.snapshot.tools)


# Signals only a few tools carry (a hub's correction): left out where zero.
SPARSE_SIGNALS = frozenset({"hub"})


@dataclass
class Scored:
    """A scorer's output: final scores plus the named signals behind them."""

    scorer: str
    scores: np.ndarray
    signals: dict[str, np.ndarray] = field(default_factory=dict)
    fallback_reason: str = ""
    notes: list[str] = field(default_factory=list)
    extras: dict[str, Any] = field(default_factory=dict)
    filtered: dict[str, np.ndarray] = field(default_factory=dict)

    def signal_values(self, row: int) -> dict[str, float]:
        """Every signal's value for one tool, rounded for display (a sparse
        signal only where the tool has it)."""
        values = {k: round(float(v[row]), 4) for k, v in self.signals.items()}
        return {k: v for k, v in values.items() if v or k not in SPARSE_SIGNALS}


def sigmoid(x: np.ndarray | float) -> np.ndarray:
    """Logistic function, numerically safe for large magnitudes."""
    return 1.0 / (1.0 + np.exp(-np.clip(x, -60.0, 60.0)))
