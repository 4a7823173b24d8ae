"""A tool definition screened: every text a model reads (title, description,
every string of the input and output schemas and annotations), the catalog's
norms (length), its other tools (names mentioned, near-copies).

``Neighbourhood`` is the catalog as the rules need it, built once from its
other tools' names and descriptions and extended as a batch writes more.
"""

from __future__ import annotations

import math
import re
import statistics
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from screening.near_copies import Definition, NearCopyIndex, short_name
from screening.rules import Finding
from screening.text import excerpt_of, model_text

# A description this many times the catalog's median, and at least this long.
LENGTH_FACTOR = 8
LENGTH_FLOOR = 2_000
# The norm needs a few tools to mean anything; under it, only the floor's double.
MIN_NORM_TOOLS = 5
BASE64 = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{80,}={0,2}")
# Bits per character of a base64 run of random bytes: ~6; of words, paths and
# sequences in an alphabet of ~20 letters: under 4.5.
BASE64_ENTROPY = 4.8
BLOB = re.compile(
    r"\b[0-9a-fA-F]{128,}\b|\bdata:[\w.+-]+/[\w.+-]+;base64,"
    r"|(?:\\u[0-9a-fA-F]{4}){8,}|(?:%[0-9a-fA-F]{2}){12,}|(?:\\x[0-9a-fA-F]{2}){12,}"
)
_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[_.\-/][A-Za-z0-9]+)+")
# The schema keywords whose strings are text for the model (not names or types).
TEXT_KEYWORDS = frozenset({"description", "title", "examples", "default", "enum"})


@dataclass
class Neighbourhood:
    """The catalog's other tools as the rules read them: names (and the name a
    source gave each, after ``__``) by origin (the source that brought each; ""
    for a curator's), their descriptions and schemas for the near-copy rule
    (``screening.near_copies``), the median length."""

    names: dict[str, str] = field(default_factory=dict)
    lengths: list[int] = field(default_factory=list)
    copies: NearCopyIndex = field(default_factory=NearCopyIndex, repr=False)
    short_names: dict[str, set[str]] = field(default_factory=dict)
    median: float | None = field(default=None, repr=False)

    @classmethod
    def of(cls, tools: Iterable[Sequence[Any]]) -> Neighbourhood:
        """From (name, description, origin[, input schema]) tuples."""
        made = cls()
        for name, description, origin, *schema in tools:
            made.add(name, description, origin, schema[0] if schema else None)
        return made

    def add(
        self,
        name: str,
        description: str,
        origin: str = "",
        parameters: Mapping[str, Any] | None = None,
    ) -> None:
        self.names[name] = origin
        self.median = None
        short = short_name(name)
        if short != name and _IDENTIFIER.fullmatch(short):
            self.short_names.setdefault(short, set()).add(origin)
        self.lengths.append(len(description))
        self.copies.add(Definition(name, description, parameters), origin or None)

    def median_length(self) -> float | None:
        """The median description length (worked out once until a tool is added)."""
        if len(self.lengths) < MIN_NORM_TOOLS:
            return None
        if self.median is None:
            self.median = float(statistics.median(self.lengths))
        return self.median

    def near_copies(
        self,
        name: str,
        description: str,
        origin: str = "",
        parameters: Mapping[str, Any] | None = None,
    ) -> list[str]:
        """Other tools (of another origin) whose descriptions this one nearly
        copies, most copied first (``screening.near_copies``)."""
        tool = Definition(name, description, parameters)
        return [c.name for c in self.copies.near(tool, origin or None)]

    def mentioned(self, name: str, text: str, origin: str) -> list[str]:
        """Names (or the upstream part of names) of tools of another origin
        that ``text`` of a tool from source ``origin`` names. Tools a curator
        keeps may name each other (a workflow); a source's tools naming tools
        it did not bring is one server steering the agent to another's."""
        if not origin:
            return []
        own = {name, short_name(name)}
        found = []
        for match in _IDENTIFIER.finditer(text):
            word = match[0]
            if word in own or len(word) < 5:
                continue
            origins = self.short_names.get(word, set())
            if word in self.names:
                origins = origins | {self.names[word]}
            if origins - {origin}:
                found.append(word)
        return sorted(set(found))


def screen_definition(
    definition: Mapping[str, Any],
    neighbours: Neighbourhood | None = None,
    origin: str = "",
) -> list[Finding]:
    """Every finding of the definition (``name``, ``title``, ``description``,
    ``inputSchema``, ``outputSchema``, ``annotations``) of a tool from source
    ``origin`` ("" for a curator's), each naming its rule and the field path;
    one finding per rule and field."""
    name = str(definition.get("name") or "")
    description = str(definition.get("description") or "")
    found: list[Finding] = []
    for where, text in texts(definition):
        found.extend(model_text(text, where))
        if where in ("description", "title") or where.endswith("/description"):
            found.extend(_blobs(text, where))
        if neighbours is not None:
            for other in neighbours.mentioned(name, text, origin)[:1]:
                start = text.find(other)
                found.append(
                    Finding("other-tool", where, start, start + len(other), other)
                )
    if neighbours is not None:
        schema = definition.get("inputSchema")
        parameters = schema if isinstance(schema, Mapping) else None
        tool = Definition(name, description, parameters)
        found.extend(_catalog_norms(tool, neighbours, origin))
    return _once(found)


def texts(definition: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """Each text of a definition a model reads, with its field path."""
    for key in ("title", "description"):
        value = definition.get(key)
        if isinstance(value, str) and value:
            yield key, value
    for key, path in (
        ("inputSchema", "parameters"),
        ("outputSchema", "outputSchema"),
        ("annotations", "annotations"),
    ):
        value = definition.get(key)
        if value is not None:
            yield from _strings(value, path, key == "annotations")


def _strings(value: Any, path: str, every: bool) -> Iterator[tuple[str, str]]:
    """The strings of a schema that are text (``every``: all of them), and the
    property names (a model reads those too)."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            here = f"{path}/{key}"
            if isinstance(key, str) and path.endswith("/properties"):
                yield here, key
            if isinstance(item, str):
                if every or key in TEXT_KEYWORDS:
                    yield here, item
            else:
                text = every or key in TEXT_KEYWORDS
                yield from _strings(item, here, text)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            here = f"{path}/{index}"
            if isinstance(item, str):
                if every:
                    yield here, item
            else:
                yield from _strings(item, here, every)


def _blobs(text: str, where: str) -> list[Finding]:
    match = BLOB.search(text)
    if match is None:
        match = next((m for m in BASE64.finditer(text) if _random(m[0])), None)
    if match is None:
        return []
    excerpt = excerpt_of(text, match.start(), match.end())
    return [Finding("encoded-blob", where, match.start(), match.end(), excerpt)]


def _random(run: str) -> bool:
    """Mixed case, digits and a high entropy: encoded bytes, not words."""
    if not (re.search(r"[a-z]", run) and re.search(r"[A-Z]", run)):
        return False
    if not re.search(r"[0-9]", run):
        return False
    counts = Counter(run)
    entropy = -sum(n / len(run) * math.log2(n / len(run)) for n in counts.values())
    return entropy >= BASE64_ENTROPY


def _catalog_norms(
    tool: Definition, neighbours: Neighbourhood, origin: str
) -> list[Finding]:
    description = tool.description
    found = []
    median = neighbours.median_length()
    limit = (
        max(LENGTH_FLOOR, LENGTH_FACTOR * median)
        if median is not None
        else 2 * LENGTH_FLOOR
    )
    if len(description) > limit:
        norm = f"median {median:.0f}" if median is not None else "no norm yet"
        excerpt = f"{len(description)} characters ({norm}; limit {limit:.0f})"
        found.append(Finding("extreme-length", "description", 0, 0, excerpt))
    copies = neighbours.near_copies(tool.name, description, origin, tool.parameters)
    if copies:
        excerpt = "nearly the same as " + ", ".join(copies[:3])
        found.append(Finding("near-copy", "description", 0, 0, excerpt))
    return found


def _once(found: list[Finding]) -> list[Finding]:
    """The first finding of each rule at each place."""
    seen: set[tuple[str, str]] = set()
    kept = []
    for finding in found:
        key = (finding.rule, finding.where)
        if key not in seen:
            seen.add(key)
            kept.append(finding)
    return kept
