"""Turn a request's query or chat messages into weighted search terms (seed 004).

* a string is used as is;
* a JSON object is flattened to "key value" phrases, keys split into words, so
  ``{"city": "Paris", "unitSystem": "metric"}`` searches for ``city paris unit
  system metric``;
* chat messages: the latest user turn counts fully, earlier user turns and the
  assistant's words count less (halving per turn back), system prompts and tool
  outputs not at all; the assistant's earlier tool calls become ``recent_tools``
  (most recent first), which feed the ensemble's transition and recency signals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from selection.engine.text import STOPWORDS, stem, words
from selection.engine.types import SelectionRequest

EARLIER_USER_WEIGHT = 0.5
ASSISTANT_WEIGHT = 0.3
MIN_TURN_WEIGHT = 0.05


@dataclass(frozen=True)
class NormalizedQuery:
    """Weighted stemmed terms plus context taken from the conversation."""

    text: str
    terms: dict[str, float]
    surface: dict[str, str] = field(default_factory=dict)
    recent_tools: tuple[str, ...] = ()
    embed_text: str = ""

    @property
    def last_tool(self) -> str | None:
        """The most recently called tool, if any."""
        return self.recent_tools[0] if self.recent_tools else None


def flatten_json(value: Any) -> str:
    """Keys and values of a JSON value as words, depth first, in document order."""
    if isinstance(value, Mapping):
        parts = [f"{key} {flatten_json(item)}" for key, item in value.items()]
        return " ".join(p.strip() for p in parts)
    if isinstance(value, (list, tuple)):
        return " ".join(flatten_json(item) for item in value)
    if value is None or isinstance(value, bool):
        return ""
    return str(value)


def content_text(content: Any) -> str:
    """The text of an OpenAI message ``content`` (a string or a list of parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        texts = []
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif isinstance(part, str):
                texts.append(part)
        return " ".join(texts)
    return ""


def _called_tools(message: Mapping[str, Any]) -> list[str]:
    """Names of the tools an assistant message called (new and legacy formats)."""
    names = []
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, Mapping) else None
        if isinstance(function, Mapping) and function.get("name"):
            names.append(str(function["name"]))
    legacy = message.get("function_call")
    if isinstance(legacy, Mapping) and legacy.get("name"):
        names.append(str(legacy["name"]))
    return names


def _weighted_turns(
    messages: Sequence[Mapping[str, Any]],
) -> tuple[list[tuple[str, float]], list[str]]:
    """(text, weight) per useful turn, newest first, and tools called, oldest first."""
    turns: list[tuple[str, float]] = []
    called: list[str] = []
    user_seen = 0
    for message in reversed(messages):
        role = message.get("role")
        if role == "assistant":
            called[:0] = _called_tools(message)
        text = content_text(message.get("content"))
        if role == "user" and text.strip():
            turns.append((text, EARLIER_USER_WEIGHT**user_seen))
            user_seen += 1
        elif role == "assistant" and text.strip() and user_seen:
            turns.append(
                (text, ASSISTANT_WEIGHT * EARLIER_USER_WEIGHT ** (user_seen - 1))
            )
    return [(t, w) for t, w in turns if w >= MIN_TURN_WEIGHT], called


def _add_terms(
    text: str, weight: float, terms: dict[str, float], surface: dict[str, str]
) -> None:
    """Merge the text's terms into ``terms`` keeping each term's highest weight."""
    for word in words(text):
        if word in STOPWORDS:
            continue
        term = stem(word)
        if weight > terms.get(term, 0.0):
            terms[term] = weight
        surface.setdefault(term, word)


def _unique_recent(explicit: Sequence[str], called: Sequence[str]) -> tuple[str, ...]:
    """Explicit recent tools first, then calls newest first, without repeats."""
    seen: dict[str, None] = {}
    for name in [*explicit, *reversed(called)]:
        seen.setdefault(name, None)
    return tuple(seen)


def normalize(request: SelectionRequest) -> NormalizedQuery:
    """The weighted terms, display words and recent tools of ``request``."""
    terms: dict[str, float] = {}
    surface: dict[str, str] = {}
    called: list[str] = []
    if request.messages:
        turns, called = _weighted_turns(request.messages)
    else:
        query = request.query
        text = query if isinstance(query, str) else flatten_json(query)
        turns = [(text, 1.0)] if text else []
    for text, weight in turns:
        _add_terms(text, weight, terms, surface)
    if request.messages and request.query is not None:
        extra = request.query
        text = extra if isinstance(extra, str) else flatten_json(extra)
        _add_terms(text, 1.0, terms, surface)
        turns.insert(0, (text, 1.0))
    latest = turns[0][0] if turns else ""
    return NormalizedQuery(
        text=" ".join(t for t, _ in turns),
        terms=terms,
        surface=surface,
        recent_tools=_unique_recent(request.recent_tools, called),
        embed_text=latest.strip(),
    )
