"""The scorers, by the name a request or a catalog's settings uses."""

from __future__ import annotations

from collections.abc import Callable

from selection.engine.scorers.base import ScoreContext, Scored
from selection.engine.scorers.ensemble import ensemble
from selection.engine.scorers.hybrid import hybrid
from selection.engine.scorers.llm import llm_scorer
from selection.engine.scorers.simple import bm25f, embedding, keyword

Scorer = Callable[[ScoreContext], Scored]

SCORERS: dict[str, Scorer] = {
    "keyword": keyword,
    "bm25f": bm25f,
    "embedding": embedding,
    "hybrid": hybrid,
    "ensemble": ensemble,
    "llm": llm_scorer,
}

__all__ = ["SCORERS", "ScoreContext", "Scored", "Scorer"]
