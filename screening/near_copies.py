"""Near-copies of a catalog's tools: a new tool that repeats an existing one's
description under another name ("the improved, preferred version").

A copy that keeps the original's text ranks beside it for every request that wants
it, so the ranking cannot tell them apart; the place to stop one is the import or
sync, where a person can look at the two side by side (the ``near-copy`` rule).
``NearCopyIndex.near`` says which existing tools a new one copies: every word and
most word triples (``CONTAINMENT``) of an existing description, or for a short one
the same parameter names; never a tool of the same source.
The rule in full: docs/explanation/selection.md (the near-copy paragraph).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

# A new description holding this share of an existing one's word triples
# copies it.
CONTAINMENT = 0.8
MIN_SHINGLES = 6
# A short description of fewer words proves nothing, schema or not ("Get ID").
MIN_WORDS = 4
_WORD = re.compile(r"[^\W_]+")


class Described(Protocol):
    """Anything with a name, a description and a schema (a ToolSpec, a row)."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def parameters(self) -> Mapping[str, Any] | None: ...


@dataclass(frozen=True)
class Definition:
    """A tool's name, description and input schema, as the rule reads them."""

    name: str
    description: str
    parameters: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class NearCopy:
    """An existing tool a new one copies, and the share of its text copied."""

    name: str
    containment: float


def words(text: str) -> list[str]:
    """Lower-case words of NFKC ``text`` without format characters (zero-width,
    bidirectional, tag): what a person reading it sees."""
    text = unicodedata.normalize("NFKC", text)
    seen = "".join(c for c in text if unicodedata.category(c) != "Cf")
    return [w.lower() for w in _WORD.findall(seen)]


def shingles(text: str) -> frozenset[tuple[str, ...]]:
    """The distinct word triples of ``text``."""
    found = words(text)
    return frozenset(zip(found, found[1:], found[2:], strict=False))


def parameter_names(tool: Described) -> frozenset[str]:
    """The top-level parameter names of the tool's schema."""
    schema = tool.parameters or {}
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    return frozenset(properties) if isinstance(properties, Mapping) else frozenset()


def short_name(name: str) -> str:
    """The name a source gave a tool: after the last ``__`` of a prefixed name."""
    return name.rpartition("__")[2]


def _features(tool: Described) -> tuple[frozenset[tuple[str, ...]], int, int]:
    """The description's words (as 1-tuples) and triples, how many words, and
    how many triples (0: too short for triples)."""
    found = words(tool.description)
    triples = shingles(tool.description)
    distinct = frozenset((w,) for w in found)
    if len(triples) < MIN_SHINGLES:
        return distinct, len(distinct), 0
    return distinct | triples, len(distinct), len(triples)


@dataclass(frozen=True)
class _Entry:
    name: str
    source: Hashable
    words: int
    triples: int
    schema: frozenset[str]


class NearCopyIndex:
    """Existing tools' features, inverted, so one check costs the new tool's
    features' postings rather than a pass over the catalog; ``add`` extends it
    as a batch writes more (a name added again replaces what it said before)."""

    def __init__(
        self, tools: Iterable[Described] = (), sources: Iterable[Hashable] | None = None
    ) -> None:
        self.entries: list[_Entry] = []
        self.postings: dict[tuple[str, ...], list[int]] = {}
        self.rows: dict[str, int] = {}
        origins = iter(sources) if sources is not None else None
        for tool in tools:
            self.add(tool, next(origins) if origins is not None else None)

    def add(self, tool: Described, source: Hashable | None = None) -> None:
        """Index ``tool`` (from ``source``; None: a curator's own)."""
        found, distinct, triples = _features(tool)
        schema = parameter_names(tool)
        self.rows.pop(tool.name, None)
        if not triples and (not schema or distinct < MIN_WORDS):
            return  # a few words alone prove nothing
        row = self.rows[tool.name] = len(self.entries)
        self.entries.append(_Entry(tool.name, source, distinct, triples, schema))
        for feature in found:
            self.postings.setdefault(feature, []).append(row)

    def near(self, tool: Described, source: Hashable | None = None) -> list[NearCopy]:
        """The indexed tools ``tool`` nearly copies, most copied first; never
        one of the same (short) name or, when given, the same source."""
        mine, _, _ = _features(tool)
        shared: dict[int, list[int]] = {}
        for feature in mine:
            for row in self.postings.get(feature, ()):
                shared.setdefault(row, [0, 0])[len(feature) == 3] += 1
        schema = parameter_names(tool)
        own = short_name(tool.name)
        found = []
        for row, (words_shared, triples_shared) in shared.items():
            entry = self.entries[row]
            if (
                self.rows.get(entry.name) == row
                and words_shared == entry.words
                and triples_shared >= CONTAINMENT * entry.triples
                and short_name(entry.name) != own
                and (source is None or entry.source != source)
                and (entry.triples or entry.schema == schema)
            ):
                share = triples_shared / entry.triples if entry.triples else 1.0
                found.append(NearCopy(entry.name, share))
        return sorted(found, key=lambda c: (-c.containment, c.name))


def near_copy_of(
    tool: Described, existing: Iterable[Described], source: Hashable | None = None
) -> list[NearCopy]:
    """The ``existing`` tools ``tool`` nearly copies (see the module docstring)."""
    return NearCopyIndex(existing).near(tool, source)
