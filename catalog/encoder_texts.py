"""The texts the static query encoder (embeddings.static_training) is trained on,
made from tool definitions only (never requests): names, descriptions and their
sentences, parameters, and request-like variants ("Can you <what the tool does>
with <a parameter>?", two or three tools' purposes joined the way a long request
joins them). About ten texts per tool."""

from __future__ import annotations

import random
import re
from collections.abc import Iterable
from dataclasses import dataclass

from catalog.tool_text import schema_properties, split_identifier

TEMPLATES = (
    "I want to {d}",
    "Can you {d}?",
    "Please {d}.",
    "I need to {d}",
    "Help me {d}",
    "{d}",
    "How do I {d}?",
    "Could you {d} for me",
    "I'd like to {d}, thanks",
)
VARIANTS_PER_TOOL = 3
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class ToolText:
    """What training reads of one tool."""

    name: str
    description: str
    parameters: object = None


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def _sentences(description: str) -> list[str]:
    parts = (part.strip() for part in _SENTENCE_END.split(description.strip()))
    return [part for part in parts if len(part) > 3][:4]


def _tool_texts(tool: ToolText, rnd: random.Random) -> tuple[list[str], str]:
    """A tool's own texts and request-like variants, and its purpose phrase."""
    name = " ".join(split_identifier(tool.name))
    description = tool.description.strip()
    sentences = _sentences(description)
    params = list(schema_properties(tool.parameters))
    texts = [name, description, f"{name}: {description}", *sentences]
    texts += [f"{' '.join(words)} {text}".strip() for words, text in params[:6]]
    for _ in range(VARIANTS_PER_TOOL):
        base = _lower_first(rnd.choice(sentences).rstrip(".")) if sentences else name
        if params and rnd.random() < 0.5:
            words, text = rnd.choice(params)
            base += f" with {' '.join(words)} {_lower_first(text)[:60]}"
        texts.append(rnd.choice(TEMPLATES).format(d=base))
    purpose = sentences[0].rstrip(".") if sentences else name
    return texts, purpose


def training_texts(tools: Iterable[ToolText], seed: int = 0) -> list[str]:
    """Distinct training texts for ``tools`` (deterministic for a seed)."""
    rnd = random.Random(seed)
    texts: list[str] = []
    purposes: list[str] = []
    for tool in tools:
        own, purpose = _tool_texts(tool, rnd)
        texts += own
        purposes.append(purpose)
    for _ in purposes:  # requests that ask for two or three things at once
        parts = [_lower_first(rnd.choice(purposes)) for _ in range(rnd.choice((2, 3)))]
        texts.append(rnd.choice(TEMPLATES).format(d=", then ".join(parts)))
        texts.append(". ".join(p[:1].upper() + p[1:] for p in parts) + ".")
    return list(dict.fromkeys(t for t in texts if t.strip()))
