"""Plain-text facts about a tool, written once for the catalog and the engine.

Pure Python (no Django): the embedding text (catalog.embedding_text), the engine's
lexical index (selection.engine.records) and the provider formats all read a tool's
name words, its schema's properties and its prompt-token cost from here.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

MAX_SCHEMA_DEPTH = 2
CHARS_PER_TOKEN = 4
TOKEN_OVERHEAD = 10

_WORD_RE = re.compile(
    r"[A-Z]+(?=[A-Z][a-z])"  # an acronym followed by a capitalised word: HTTP|Server
    r"|[A-Z]?[a-z]+[0-9]*"  # a (capitalised) lower-case word with trailing digits
    r"|[A-Z]+[0-9]*"  # an acronym, possibly with trailing digits
    r"|[0-9]+"  # a lone number
)


def split_identifier(name: str) -> list[str]:
    """Split a code identifier into lower-case words so a model sees real words.

    ``getWeatherForecast`` -> ``["get", "weather", "forecast"]``,
    ``send_email_v2`` -> ``["send", "email", "v2"]``,
    ``HTTPServerError`` -> ``["http", "server", "error"]``. Any character that is not
    a letter or a digit (``_``, ``-``, ``.``, ``/``, spaces) separates words.
    """
    words: list[str] = []
    for chunk in re.split(r"[^A-Za-z0-9]+", name):
        words.extend(match.lower() for match in _WORD_RE.findall(chunk))
    return words


def split_words(text: str) -> list[str]:
    """``split_identifier`` for text in any script (an original name such as
    ``Wetter für Köln``): letters and digits of every script are kept."""
    words: list[str] = []
    for chunk in re.findall(r"[^\W_]+", text):
        if chunk.isascii():
            words.extend(split_identifier(chunk))
        else:
            words.append(chunk.lower())
    return words


def schema_properties(
    schema: Any, prefix: tuple[str, ...] = (), depth: int = 1
) -> Iterator[tuple[list[str], str]]:
    """(name words, description) for the properties of a JSON Schema object.

    Recurses into object-valued properties and arrays of objects, at most
    ``MAX_SCHEMA_DEPTH`` levels, so deep or cyclic-looking schemas stay bounded; a
    nested property's words start with its parent's (``filters date from``)."""
    if not isinstance(schema, Mapping) or depth > MAX_SCHEMA_DEPTH:
        return
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return
    for raw_name, prop in properties.items():
        words = [*prefix, *split_identifier(str(raw_name))]
        if not isinstance(prop, Mapping):
            yield words, ""
            continue
        description = prop.get("description")
        yield words, description if isinstance(description, str) else ""
        nested = prop.get("items") if prop.get("type") == "array" else prop
        yield from schema_properties(nested, tuple(words), depth + 1)


def definition_tokens(definition: Mapping[str, Any]) -> int:
    """An estimate (not a tokenizer count) of the prompt tokens a tool costs.

    The compact JSON of its OpenAI definition at about four characters per token,
    plus a fixed overhead for the framing a provider adds: good enough to budget
    how many tools fit in a request, not for billing."""
    text = json.dumps(definition, separators=(",", ":"), ensure_ascii=False)
    return math.ceil(len(text) / CHARS_PER_TOKEN) + TOKEN_OVERHEAD
