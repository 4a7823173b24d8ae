"""Near-copies of a catalog's tools: a new tool that repeats an existing one's
description under another name ("the improved, preferred version").

A copy that keeps the original's text ranks beside it for every request that
wants it, so the ranking cannot tell them apart; the place to stop one is the
import, where a person can look at the two side by side. ``NearCopyIndex.near``
says which existing tools a new one copies:

* the share of an existing description's word triples (3-shingles, after
  Unicode normalisation, invisible characters dropped, lower-cased) that the new
  description holds is at least ``CONTAINMENT`` (a copy with a line added keeps
  them all; tools that merely share a phrasing share a few); or
* for a description too short for triples (under ``MIN_SHINGLES``: "Retrieve
  details of a film"), all of its words and the very same parameter names (a
  copy keeps the schema, so that it can be called in the original's place); a
  short description without a schema proves nothing and is skipped.

Tools of the same source (one upstream server, one import) are never each
other's copies: an API's endpoints often share their boilerplate, and a source
that copies itself gains nothing. Pure Python: no Django, no database, so the
import can call it and bench/attacks.py can measure its catch rate and the share
of a clean catalog's own tools it would hold.
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


def _features(tool: Described) -> tuple[frozenset[tuple[str, ...]], bool]:
    """The description's triples, or for a short one its words (as 1-tuples),
    and whether it is long enough for triples."""
    found = shingles(tool.description)
    if len(found) >= MIN_SHINGLES:
        return found, True
    return frozenset((w,) for w in words(tool.description)), False


@dataclass(frozen=True)
class _Entry:
    name: str
    source: Hashable
    size: int
    long: bool
    schema: frozenset[str]


class NearCopyIndex:
    """Existing tools' features, inverted, so one check costs the new tool's
    features' postings rather than a pass over the catalog."""

    def __init__(
        self, tools: Iterable[Described], sources: Iterable[Hashable] | None = None
    ) -> None:
        self.entries: list[_Entry] = []
        self.postings: dict[tuple[str, ...], list[int]] = {}
        origins = iter(sources) if sources is not None else None
        for tool in tools:
            source = next(origins) if origins is not None else None
            found, long = _features(tool)
            schema = parameter_names(tool)
            if not long and not schema:  # a few words alone prove nothing
                continue
            row = len(self.entries)
            self.entries.append(_Entry(tool.name, source, len(found), long, schema))
            for feature in found:
                self.postings.setdefault(feature, []).append(row)

    def near(self, tool: Described, source: Hashable | None = None) -> list[NearCopy]:
        """The indexed tools ``tool`` nearly copies, most copied first; never
        one of the same name or (when given) the same source."""
        mine = shingles(tool.description) | {(w,) for w in words(tool.description)}
        shared: dict[int, int] = {}
        for feature in mine:
            for row in self.postings.get(feature, ()):
                shared[row] = shared.get(row, 0) + 1
        schema = parameter_names(tool)
        found = []
        for row, count in shared.items():
            entry = self.entries[row]
            needed = CONTAINMENT * entry.size if entry.long else entry.size
            if (
                count >= needed
                and entry.name != tool.name
                and (source is None or entry.source != source)
                and (entry.long or entry.schema == schema)
            ):
                found.append(NearCopy(entry.name, count / entry.size))
        return sorted(found, key=lambda c: (-c.containment, c.name))


def near_copy_of(
    tool: Described, existing: Iterable[Described], source: Hashable | None = None
) -> list[NearCopy]:
    """The ``existing`` tools ``tool`` nearly copies (see the module docstring)."""
    return NearCopyIndex(existing).near(tool, source)
