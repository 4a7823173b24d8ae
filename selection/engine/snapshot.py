"""An immutable view of one catalog version, with lazily built, cached indexes.

The app builds a ``CatalogSnapshot`` when a catalog version is published and keeps
it for as long as that version is current; every request then reuses the same
lexical index and policy arrays, built once in O(N).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from selection.engine.index import LexicalIndex
from selection.engine.learnt import LearntSignal
from selection.engine.sentences import PoolRows, RowPool, SentencePool
from selection.engine.settings import EngineSettings
from selection.engine.types import ToolRecord
from selection.engine.vectors import VectorTable

if TYPE_CHECKING:
    from selection.engine.fusion import CatalogFusion


@dataclass(frozen=True, eq=False)
class CatalogSnapshot:
    """The tools and settings of one catalog version."""

    catalog: str
    version: str
    tools: tuple[ToolRecord, ...]
    settings: EngineSettings = field(default_factory=EngineSettings)
    # The active model's tool vectors, for in-process semantic search (small
    # catalogs only; None: the app asks pgvector).
    vectors: VectorTable | None = None
    # The applied learnt model's signal (learning.fit), when the settings name one.
    learnt: LearntSignal | None = None

    @cached_property
    def index(self) -> LexicalIndex:
        """BM25F impacts and field postings over all tools (built on first use)."""
        s = self.settings
        return LexicalIndex(self.tools, s.field_weights, s.bm25_k1, s.bm25_b)

    @cached_property
    def fusion(self) -> CatalogFusion:
        """What the catalog's own texts chose for the hybrid's fusion (built
        once per snapshot: ``selection.engine.fusion``)."""
        # Imported here: fusion scores with the scorers, which import this module.
        from selection.engine.fusion import measure

        return measure(self.tools, self.index, self.vectors)

    @cached_property
    def by_name(self) -> dict[str, int]:
        """Tool name -> row (the first tool wins if a name repeats)."""
        return _first_rows([tool.name for tool in self.tools])

    def named_pool(self, rows: Mapping[int, float]) -> RowPool:
        """A pool of row -> semantic score (``VectorTable.nearest_mixed``) keyed
        by tool name, as ``select`` takes it; where names are unique (a name and
        its row then say the same) it also keeps the rows and scores as arrays
        (``RowPool.located``), which the engine reads without a lookup per name."""
        tools, count = self.tools, len(rows)
        at = np.fromiter(rows.keys(), dtype=np.int64, count=count)
        named = dict(zip(self.names[at].tolist(), rows.values(), strict=True))
        if isinstance(rows, SentencePool):
            pool: RowPool = SentencePool(named, rows.request_best)
        else:
            pool = RowPool(named)
        if len(self.by_name) == len(tools):
            scores = np.fromiter(rows.values(), dtype=np.float64, count=count)
            pool.located = PoolRows(tools, at, scores)
        return pool

    @cached_property
    def names(self) -> np.ndarray:
        """The tools' names by row, as an array of Python strings."""
        names = np.empty(len(self.tools), dtype=object)
        names[:] = [tool.name for tool in self.tools]
        return names

    @cached_property
    def by_provider_name(self) -> dict[str, int]:
        """Provider-safe name -> row: the name a model was shown and calls a
        tool by (``weather_get_forecast`` for ``weather.get_forecast``)."""
        named = _first_rows([tool.provider_name for tool in self.tools])
        named.pop("", None)
        return named

    @cached_property
    def by_lower_name(self) -> dict[str, int]:
        """Lower-cased tool name -> row, for forgiving lookups (LLM answers)."""
        return _first_rows([tool.name.lower() for tool in self.tools])

    @cached_property
    def order(self) -> np.ndarray:
        """Rank of each row under the tie-break (position, then name)."""
        rows = sorted(
            range(len(self.tools)),
            key=lambda r: (self.tools[r].position, self.tools[r].name),
        )
        rank = np.empty(len(rows), dtype=np.int64)
        rank[rows] = np.arange(len(rows))
        return rank

    @cached_property
    def arrays(self) -> PolicyArrays:
        """Column arrays of the facts policy checks, for vectorised filtering."""
        return PolicyArrays.build(self.tools, self.settings)

    @cached_property
    def learnt_rows(self) -> np.ndarray:
        """Row of each of the learnt signal's tools (-1: no longer here)."""
        names = self.learnt.tools if self.learnt is not None else ()
        return np.array([self.by_name.get(n, -1) for n in names], dtype=np.int64)

    @cached_property
    def learnt_map(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(snapshot rows, learnt signal rows) of the learnt signal's tools still
        here; None when its tools are this snapshot's rows, in order."""
        rows = self.learnt_rows
        if len(rows) == len(self.tools) and (rows == np.arange(len(rows))).all():
            return None
        here = np.flatnonzero(rows >= 0)
        return rows[here], here

    def rows(self, names: tuple[str, ...] | list[str]) -> list[int]:
        """Rows of the named tools that exist in this snapshot."""
        return [self.by_name[n] for n in names if n in self.by_name]

    def with_settings(self, settings: EngineSettings) -> CatalogSnapshot:
        """The same tools ranked under other settings ("try with these settings").
        Caches that do not depend on the settings are shared; the lexical index
        too while the field weights and BM25 parameters are the same."""
        other = replace(self, settings=settings)
        shared = ["by_name", "by_lower_name", "order"]
        if _lexical(settings) == _lexical(self.settings):
            shared += ["index", "fusion"]
        for name in shared:
            if name in self.__dict__:
                other.__dict__[name] = self.__dict__[name]
        return other

    def warm(self) -> CatalogSnapshot:
        """Build every cache now (e.g. at publish time) and return self."""
        _ = self.index, self.by_name, self.by_lower_name, self.order, self.arrays
        _ = self.names
        _ = self.fusion
        if self.learnt is not None:
            _ = self.learnt.warm(), self.learnt_map
        return self


@dataclass(frozen=True)
class PolicyArrays:
    """Per-tool policy facts as numpy columns plus value -> rows lookups."""

    active: np.ndarray
    # Held for review (catalog's status "held"): hidden from agents, never named.
    held: np.ndarray
    safe: np.ndarray
    schema_ok: np.ndarray
    cost: np.ndarray
    tokens: np.ndarray
    open_roles: np.ndarray
    role_rows: dict[str, np.ndarray]
    capability_rows: dict[str, np.ndarray]
    category_rows: dict[str, np.ndarray]

    @staticmethod
    def build(tools: tuple[ToolRecord, ...], settings: EngineSettings) -> PolicyArrays:
        """Read every tool once; no-schema tools pass only in an allowed mode."""
        allowed_modes = set(settings.no_schema_modes_allowed)
        roles: dict[str, list[int]] = {}
        caps: dict[str, list[int]] = {}
        cats: dict[str, list[int]] = {}
        for row, tool in enumerate(tools):
            for role in tool.allowed_roles:
                roles.setdefault(role, []).append(row)
            for cap in tool.capabilities:
                caps.setdefault(cap, []).append(row)
            cats.setdefault(tool.category.lower(), []).append(row)
        return PolicyArrays(
            active=np.array([t.status == "active" for t in tools], dtype=bool),
            held=np.array([t.status == "held" for t in tools], dtype=bool),
            safe=np.array([t.safe for t in tools], dtype=bool),
            schema_ok=np.array(
                [
                    t.has_schema
                    or (t.allow_no_schema and t.no_schema_mode in allowed_modes)
                    for t in tools
                ],
                dtype=bool,
            ),
            cost=np.array([t.cost_per_call for t in tools], dtype=np.float64),
            tokens=np.array([t.prompt_tokens for t in tools], dtype=np.int64),
            open_roles=np.array([not t.allowed_roles for t in tools], dtype=bool),
            role_rows={k: np.array(v, dtype=np.int64) for k, v in roles.items()},
            capability_rows={k: np.array(v, dtype=np.int64) for k, v in caps.items()},
            category_rows={k: np.array(v, dtype=np.int64) for k, v in cats.items()},
        )


def _lexical(settings: EngineSettings) -> tuple[dict[str, float], float, float]:
    """What the lexical index is built from, besides the tools."""
    return dict(settings.field_weights), settings.bm25_k1, settings.bm25_b


def _first_rows(keys: list[str]) -> dict[str, int]:
    """Key -> its first row. Built from the last row back, so an earlier row
    overwrites a later one: one C-level pass (a Python loop took ~30 ms at
    100,000 tools, paid by the first request after a tool is deleted)."""
    return dict(zip(reversed(keys), range(len(keys) - 1, -1, -1), strict=True))
