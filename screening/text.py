"""Text aimed at the model: hidden characters and instructions, in any text.

The same rules read a definition's texts and a result's. The instruction rules
are RE2 patterns (linear in the text, whatever it holds), all of them first run
together as one pass that decides whether any could match: most texts, a tool's
ordinary result among them, cost that one pass. A text is cut to ``MAX_SCAN``
characters.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from typing import Any

import re2

from screening.rules import Finding

MAX_SCAN = 1_000_000
EXCERPT = 80

TAGS = re.compile("[\U000e0000-\U000e007f]+")
BIDI = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]+")
# In results, an emoji's joiner and presentation selector are ordinary text.
_RESULT_KEPT = frozenset("\u200d\ufe0f")

_GAP = r"[^.\n]{0,40}?"
_IGNORE = (
    r"\b(?:ignore|disregard|forget|override|bypass)\b" + _GAP + r"\b(?:previous|prior"
    r"|above|earlier|preceding|all|any|your|system|original)\b"
    + _GAP
    + r"\b(?:instructions?|prompts?|rules|directions|guidelines|directives)\b"
    r"|\byou are now\b|\bfrom now on,? you (?:must|will|should|are)\b"
    r"|\bnew (?:system )?instructions\s*:"
)
_CONCEAL = (
    r"\b(?:do not|don't|dont|never|must not|should not)\s+(?:tell|inform|notify"
    r"|mention|reveal|show|disclose|alert|let)\b[^.\n]{0,30}?\b(?:the user|users?"
    r"|humans?|anyone)\b"
    r"|\bwithout\s+(?:telling|informing|notifying|alerting|asking)\s+(?:the\s+)?"
    r"(?:user|human)\b"
    r"|\b(?:hide|conceal|keep)\b[^.\n]{0,30}?\b(?:from|hidden from|secret from)\s+"
    r"(?:the\s+)?(?:user|human)\b"
    r"|\b(?:the\s+)?user\s+(?:must|should|need|needs)\s+not\s+(?:know|see|be told)\b"
)
_SENSITIVE = (
    r"(?:~/\.ssh|\.ssh/|\bid_(?:rsa|dsa|ecdsa|ed25519)\b|/etc/(?:passwd|shadow|sudoers)"
    r"|\.aws/credentials|\.git-credentials|\.netrc\b|\.npmrc\b|\.pypirc\b"
    r"|\.docker/config\.json|\.kube/config|\bmcp\.json\b|(?:^|[^\w.])\.env\b"
    r"|\.(?:bash|zsh)_history)"
)
_READ = (
    r"\b(?:read|open|cat|load|send|upload|include|attach|post|copy|print|fetch"
    r"|provide|pass|share|forward|exfiltrate|output|collect|grab|dump)\b"
    r"[^\n]{0,80}?" + _SENSITIVE
)
_CALL_FIRST = (
    r"\b(?:always|must|should)\b[^.\n]{0,20}?\b(?:call|use|invoke|run|select"
    r"|choose|pick)\b[^.\n]{0,15}?\b(?:this|me)\b[^.\n]{0,25}?\b(?:first|instead"
    r"|every time|at the start|whenever|for (?:every|all|any))\b"
    r"|\b(?:before|prior to)\s+(?:calling|using|invoking|running|selecting"
    r"|answering|responding)\s+(?:to\s+)?(?:any|another|other|each|every|all)\b"
    r"|\binstead of\s+(?:any|all|other|the other)\s+(?:other\s+)?tools?\b"
    r"|\b(?:call|use|invoke|select)\s+this\s+tool\s+(?:first|instead|for every"
    r"|for all|for any|before any)\b"
)
_CALL_OTHER = (
    r"\b(?:call|invoke|run|execute|trigger)\s+(?:the\s+)?(?:tool\s+)?[`'\"]?"
    r"[A-Za-z][A-Za-z0-9]*(?:[_.][A-Za-z0-9]+)+\b"
)
_MARKUP = (
    r"<\s*/?\s*(?:important|system|instructions?|admin|prompt|hidden|secret"
    r"|im_start|im_end)\b[^<>]{0,40}>"
    r"|\[/?INST\]|<\|(?:im_start|im_end|system|endoftext|start_header_id)\|>"
)
_SERVER = r"\bmcp://|\b(?:other|another|all other|every other)\s+(?:mcp\s+)?servers?\b"


def _linear(pattern: str) -> Any:
    """``pattern`` compiled by RE2, case-insensitive."""
    options = re2.Options()
    options.case_sensitive = False
    options.log_errors = False
    return re2.compile(pattern, options)


_RULES = (
    ("ignore-instructions", _IGNORE),
    ("conceal-from-user", _CONCEAL),
    ("read-sensitive-files", _READ),
    ("call-first", _CALL_FIRST),
    ("call-other-tool", _CALL_OTHER),
    ("model-markup", _MARKUP),
    ("other-server", _SERVER),
)
INSTRUCTIONS = tuple((rule, _linear(pattern)) for rule, pattern in _RULES)
# One pass decides whether any instruction rule can match (most texts: none).
_ANY_INSTRUCTION = _linear("|".join(f"(?:{pattern})" for _, pattern in _RULES))


def model_text(text: str, where: str, *, result: bool = False) -> list[Finding]:
    """Every hit of the model-text rules in ``text`` (found at ``where``). For a
    result (``result``), an emoji's joiner is text and nothing is excerpted."""
    text = text[:MAX_SCAN]
    found = list(_hidden(text, where, result))
    visible, places = _visible(text)
    if not _ANY_INSTRUCTION.search(visible):
        return found
    for rule, pattern in INSTRUCTIONS:
        match = pattern.search(visible)
        if match is not None:
            start, end = match.start(), match.end()
            excerpt = "" if result else excerpt_of(visible, start, end)
            if places is not None:  # the span in the text as it was given
                start, end = places[start], places[end - 1] + 1
            found.append(Finding(rule, where, start, end, excerpt))
    return found


def _visible(text: str) -> tuple[str, list[int] | None]:
    """The text with its hidden characters taken out, so a zero-width space
    inside "ign\u200bore" hides nothing from the instruction rules (the hidden
    characters are findings of their own), and where each of its characters
    stands in ``text`` (None: the same place)."""
    if text.isascii():
        return text, None
    places = [i for i, c in enumerate(text) if not hidden_char(c)]
    if len(places) == len(text):
        return text, None
    return "".join(text[i] for i in places), places


def hidden_char(char: str, *, result: bool = False) -> bool:
    """A character that shows nothing or reorders text (a tab or newline is
    text; in a result, so is an emoji's joiner or presentation selector)."""
    if char.isascii():
        return not (char.isprintable() or char in "\t\n\r")
    if result and char in _RESULT_KEPT:
        return False
    return unicodedata.category(char) in ("Cf", "Cc", "Co")


# Where a hidden character may stand: anything but printable ASCII and spacing.
_CANDIDATE = re.compile(r"[^\x20-\x7e\t\n\r]")


def _hidden(text: str, where: str, result: bool) -> Iterator[Finding]:
    if _CANDIDATE.search(text) is None:
        return
    for rule, pattern in (("tag-characters", TAGS), ("bidi-override", BIDI)):
        match = pattern.search(text)
        if match is not None:
            named = "" if result else _codes(match[0])
            yield Finding(rule, where, match.start(), match.end(), named)
    for match in _CANDIDATE.finditer(text):
        char = match[0]
        if TAGS.match(char) or BIDI.match(char):
            continue
        if hidden_char(char, result=result):
            named = "" if result else _codes(char)
            yield Finding(
                "invisible-characters", where, match.start(), match.end(), named
            )
            return


def _codes(chars: str) -> str:
    """What hidden characters are, named by code point (never shown as such)."""
    first = sorted(set(chars))[:3]
    return ", ".join(f"U+{ord(c):04X} {unicodedata.name(c, '')}".strip() for c in first)


def excerpt_of(text: str, start: int, end: int) -> str:
    """The matched words with a little context, on one line, bounded."""
    left = max(0, start - 20)
    piece = text[left : min(len(text), max(end, start + 1) + 20)]
    piece = " ".join(piece.split())
    if len(piece) > EXCERPT:
        piece = piece[: EXCERPT - 1] + "…"
    return piece
