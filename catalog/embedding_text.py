"""The text a tool is embedded from, and the cache key of that embedding.

``embedding_text`` puts the most identifying parts first (split name, description
unless dispersed, keywords, examples, parameters) and cuts the result, because the
model reads only a document's first word pieces; fields that do not say what a tool
does are left out, so editing them leaves the vector alone. ``text_hash`` and
``embedding_key`` say whether a stored vector is still the one for a tool's text.
The rules: docs/explanation/selection.md, The text a tool is embedded from.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from catalog.coherence import is_tested
from catalog.spec import ToolSpec
from catalog.tool_text import schema_properties, split_identifier, split_words

MAX_TEXT_CHARS = 1500

_SPACE_RE = re.compile(r"\s+")


def _clean(text: str) -> str:
    """Collapse runs of whitespace so newlines inside fields do not break the layout."""
    return _SPACE_RE.sub(" ", text).strip()


def _joined(label: str, values: list[str], sep: str = ", ") -> str:
    """``Label: a, b`` for the non-empty values, or ``""`` when there are none."""
    parts = [_clean(v) for v in values if v and v.strip()]
    return f"{label}: {sep.join(parts)}" if parts else ""


def parameter_text(parameters: dict[str, Any] | None) -> str:
    """``Parameters: city: the city name; units`` - parameter names and descriptions."""
    items = []
    for words, description in schema_properties(parameters):
        name = " ".join(words)
        if not name:
            continue
        described = _clean(description)
        items.append(f"{name}: {described}" if described else name)
    return _joined("Parameters", items, sep="; ")


def _heading(spec: ToolSpec) -> str:
    """The split name (the original name's words it lacks after it), plus the
    title when it is not just the name again."""
    words = split_identifier(spec.name)
    words += [w for w in split_words(spec.original_name) if w not in words]
    name = " ".join(words)
    title = _clean(spec.title)
    if title and title.lower() != name:
        return f"{name}. {title}" if name else title
    return name


def truncate_text(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    """Cut ``text`` to at most ``limit`` characters, preferring a word boundary."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    return cut[:space].rstrip() if space > limit // 2 else cut


def embedding_text(spec: ToolSpec, *, dispersed: bool = False) -> str:
    """The documented text (see the module docstring) that ``spec`` is embedded
    from; ``dispersed``: its description is left out."""
    parts = [
        _heading(spec),
        "" if dispersed else _clean(spec.description),
        _joined("Keywords", spec.keywords),
        _joined("Examples", spec.examples, sep="; "),
        parameter_text(spec.parameters),
    ]
    return truncate_text("\n".join(part for part in parts if part))


def text_hash(text: str, model_id: str) -> str:
    """sha256 hex digest of ``model_id`` and ``text`` (NUL-separated, UTF-8).

    The separator keeps ``("ab", "c")`` and ``("a", "bc")`` from colliding.
    """
    digest = hashlib.sha256()
    digest.update(model_id.encode("utf-8"))
    digest.update(b"\x00")
    digest.update(text.encode("utf-8"))
    return digest.hexdigest()


def embedding_key(spec: ToolSpec, model_id: str, *, dispersed: bool) -> str:
    """The text hash stored with the vector of ``spec`` embedded as ``dispersed``
    says: a tested description's verdict (and, when left out, the description
    itself) is hashed with the text, so editing the description re-embeds. An
    untested description is always read."""
    if not is_tested(spec.description):
        return text_hash(embedding_text(spec), model_id)
    text = embedding_text(spec, dispersed=dispersed)
    verdict = f"left out: {spec.description}" if dispersed else "coherent"
    return text_hash(f"{text}\x00description {verdict}", model_id)


def embedding_keys(spec: ToolSpec, model_id: str) -> set[str]:
    """Every key an up-to-date vector of ``spec`` may carry (its description
    read or left out), known without embedding anything: one for an untested
    description, which is always read."""
    if not is_tested(spec.description):
        return {text_hash(embedding_text(spec), model_id)}
    return {embedding_key(spec, model_id, dispersed=d) for d in (False, True)}
