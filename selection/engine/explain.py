"""Readable reasons for picks, e.g. "Matched 'weather', 'forecast' in name and
keywords; semantic similarity 0.71".

Matched words are computed for the handful of picked tools only: their fields'
words are kept for the last ``TOKENS_KEPT`` tools picked (a tool is a frozen
record, so its words never change; keeping them for 100,000 tools would cost
more memory than re-tokenising a few tools costs time).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from selection.engine.index import FIELD_TEXT
from selection.engine.normalize import NormalizedQuery
from selection.engine.text import tokenize
from selection.engine.types import ToolRecord

FIELD_LABELS = {
    "name": "name",
    "title": "title",
    "keywords": "keywords",
    "examples": "examples",
    "description": "description",
    "category": "category",
    "tags": "tags",
    "params": "parameters",
}
MAX_WORDS = 5
# Whether an example's word (a stemmed term) counts as evidence.
Described = Callable[[str], bool]


TOKENS_KEPT = 4096


@lru_cache(maxsize=TOKENS_KEPT)
def field_tokens(tool: ToolRecord) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(field label, the field's distinct words in order) for each field with some."""
    out = []
    for field, label in FIELD_LABELS.items():
        tokens = tuple(dict.fromkeys(tokenize(FIELD_TEXT[field](tool))))
        if tokens:
            out.append((label, tokens))
    return tuple(out)


def matched_terms(
    tool: ToolRecord, query: NormalizedQuery, described: Described | None = None
) -> dict[str, list[str]]:
    """Field label -> the query's words found in that field of the tool; an
    example's words only where ``described`` says they count (the index's
    ``LexicalIndex.counts_in_examples``)."""
    out: dict[str, list[str]] = {}
    for label, tokens in field_tokens(tool):
        found = [t for t in tokens if t in query.terms]
        if label == "examples" and described is not None:
            found = [t for t in found if described(t)]
        if found:
            out[label] = [query.surface.get(t, t) for t in found]
    return out


def _join(items: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def match_sentence(
    tool: ToolRecord, query: NormalizedQuery, described: Described | None = None
) -> str:
    """ "Matched 'x', 'y' in name and description" (empty when nothing matched)."""
    fields = matched_terms(tool, query, described)
    if not fields:
        return ""
    words = list(dict.fromkeys(w for ws in fields.values() for w in ws))[:MAX_WORDS]
    quoted = ", ".join(f"'{w}'" for w in words)
    return f"Matched {quoted} in {_join(list(fields)[:3])}"


def _context_parts(signals: dict[str, float], last_tool: str | None) -> list[str]:
    """Phrases for the ensemble's context signals that contributed."""
    parts = []
    if signals.get("sticky", 0) > 0:
        parts.append("used recently")
    if signals.get("transition", 0) > 0 and last_tool:
        parts.append(f"often follows {last_tool} (p={signals['transition']:.2f})")
    if signals.get("focus", 0) >= 1.0:
        parts.append("same category as the last tool used")
    if signals.get("anchor", 0) > 0:
        parts.append(f"an intent pattern matched (boost {signals['anchor']:.1f})")
    if signals.get("avoid", 0) > 0:
        parts.append("penalised: the request matches its 'avoid when' note")
    return parts


def reason(
    tool: ToolRecord,
    query: NormalizedQuery,
    signals: dict[str, float],
    flags: dict[str, bool],
    described: Described | None = None,
) -> str:
    """One sentence saying why this tool was picked (``described``: see
    ``matched_terms``)."""
    if flags.get("fallback_order"):
        return "Listed in registration order: the time budget ran out before scoring."
    parts = []
    if flags.get("core"):
        parts.append("Core tool of this catalog, always offered")
    if flags.get("exploration"):
        parts.append("Exploration slot, drawn from the tools just below the cut")
    if "llm" in signals and signals["llm"] > 0:
        parts.append("Chosen by the LLM")
    match = match_sentence(tool, query, described)
    if match:
        parts.append(match)
    if signals.get("cosine", 0) > 0:
        parts.append(f"semantic similarity {signals['cosine']:.2f}")
    if signals.get("family", 0) > 0:
        parts.append(
            "pulled towards the best match among tools sharing its name prefix "
            f"(+{signals['family']:.2f})"
        )
    if signals.get("diversity", 0) < 0:
        parts.append("moved down: much like a tool ranked above it")
    elif signals.get("diversity", 0) > 0:
        parts.append("moved up: unlike the tools ranked above it")
    if signals.get("hub", 0) < 0:
        parts.append(
            "moved down: its description sits close to every tool of the catalog "
            f"({signals['hub']:.2f} semantic)"
        )
    if signals.get("learnt", 0) > 0:
        parts.append(
            f"learnt from this catalog's labelled requests (+{signals['learnt']:.2f})"
        )
    parts.extend(_context_parts(signals, query.last_tool))
    if not parts:
        return "No direct evidence; ranked by its overall score."
    sentence = "; ".join(parts)
    return sentence[0].upper() + sentence[1:] + "."
