"""Provider-safe tool names.

OpenAI (and the providers that copy its rules) only accept function names matching
``^[a-zA-Z0-9_-]{1,64}$``, while a Quiver tool name is free text ("Website Screenshot
or Thumbnail_/capture"). These helpers map free names to safe ones deterministically,
so the same catalog always exports the same names and a provider's tool call can be
mapped back to the tool that was offered.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

MAX_NAME_LENGTH = 64
HASHED_PREFIX_LENGTH = 55
HASH_HEX_LENGTH = 8
FALLBACK_NAME = "tool"
# Every name _first_free can return for a base starts with this many of its first
# characters (a suffix "_N" shortens the base to 64 - len("_N") >= 50 characters),
# so looking up taken names with this prefix finds every possible collision.
COLLISION_PREFIX_LENGTH = 50

SAFE_NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
# Runs of characters that are not letters, digits or hyphens; a run that contains at
# least one disallowed character (not just underscores) becomes a single "_".
_NON_WORD_RUN = re.compile(r"[^a-zA-Z0-9-]+")


def is_provider_safe(name: str) -> bool:
    """Whether ``name`` is already acceptable to OpenAI-style providers as is."""
    return SAFE_NAME_PATTERN.fullmatch(name) is not None


def provider_safe_name(name: str) -> str:
    """Map any tool name to one matching ``^[a-zA-Z0-9_-]{1,64}$``, deterministically.

    A name that is already safe is returned unchanged, so importing a provider's tool
    and exporting it again never renames it. Otherwise each run of disallowed
    characters (together with underscores next to it) becomes one ``_``, leading and
    trailing ``_`` are dropped, an empty result becomes ``tool``, and a result over 64
    characters keeps 55 characters plus ``_`` and 8 hex digits of the SHA-256 of the
    original name, so two long names that share a prefix still differ.
    """
    if is_provider_safe(name):
        return name
    cleaned = _NON_WORD_RUN.sub(_replace_run, name).strip("_")
    if not cleaned:
        return FALLBACK_NAME
    if len(cleaned) <= MAX_NAME_LENGTH:
        return cleaned
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:HASH_HEX_LENGTH]
    prefix = cleaned[:HASHED_PREFIX_LENGTH].rstrip("_")
    return f"{prefix}_{digest}"


def _replace_run(match: re.Match[str]) -> str:
    """Keep a run of plain underscores; collapse a run with anything else to ``_``."""
    run = match.group(0)
    return run if set(run) == {"_"} else "_"


def assign_provider_names(names: list[str], taken: set[str]) -> dict[str, str]:
    """Give each name a distinct provider-safe name that is not in ``taken``.

    Names are handled in the order given, so the result is deterministic: the first
    name to want a safe name gets it, later ones get ``_2``, ``_3``, ... (the base is
    shortened so the suffixed name still fits in 64 characters). A name listed twice
    maps to the same provider name. ``taken`` is not modified.
    """
    used = set(taken)
    assigned: dict[str, str] = {}
    for name in names:
        if name in assigned:
            continue
        candidate = _first_free(provider_safe_name(name), used)
        assigned[name] = candidate
        used.add(candidate)
    return assigned


def _first_free(base: str, used: set[str]) -> str:
    """``base`` if free, else the first ``base_N`` (N >= 2) that is free."""
    if base not in used:
        return base
    counter = 2
    while True:
        suffix = f"_{counter}"
        stem = base[: MAX_NAME_LENGTH - len(suffix)]
        candidate = f"{stem}{suffix}"
        if candidate not in used:
            return candidate
        counter += 1


# Unicode categories that render as nothing, reorder the text around them, or have no
# agreed glyph: controls, format characters (bidi overrides, zero-width), private
# use, unassigned, surrogates, and line/paragraph separators.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cn", "Cs", "Zl", "Zp"})


def hidden_characters(text: str) -> list[str]:
    """Each distinct character of ``text`` that a person reading the name could not
    see or that changes how it reads, as ``U+202E RIGHT-TO-LEFT OVERRIDE``."""
    found: dict[str, str] = {}
    for char in text:
        if char not in found and unicodedata.category(char) in _HIDDEN_CATEGORIES:
            name = unicodedata.name(char, "")
            found[char] = f"U+{ord(char):04X} {name}".rstrip()
    return list(found.values())
