"""Tokenising text for lexical matching: identifiers split, stopwords out, light stems.

Tool names are code identifiers (``getWeatherForecast``, ``send_email``), queries are
prose, so both sides go through the same pipeline: split camelCase / snake_case /
kebab-case, lower-case, keep letters and digits, drop English stopwords and the
filler words people put in requests ("please", "could you"), then strip common
inflections so "forecasts", "forecasting" and "forecast" meet. Invisible
characters (Unicode's default-ignorable ones: zero-width, bidirectional controls,
tag characters) are dropped first, so text nobody sees is never matched and
cannot split or join the words people do see.
"""

from __future__ import annotations

import re
from functools import lru_cache

from homoglyph._ucd import ucd

_CAMEL_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD_RE = re.compile(r"[^\W_]+", re.UNICODE)

# Function words plus the generic request fillers of chat queries. Content words
# (verbs like "create" or "delete", nouns) stay: they tell tools apart.
STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "are",
        "aren",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "cannot",
        "could",
        "couldn",
        "did",
        "didn",
        "do",
        "does",
        "doesn",
        "doing",
        "don",
        "down",
        "during",
        "each",
        "either",
        "else",
        "etc",
        "ever",
        "every",
        "few",
        "for",
        "from",
        "further",
        "had",
        "hadn",
        "has",
        "hasn",
        "have",
        "haven",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "however",
        "i",
        "if",
        "in",
        "into",
        "is",
        "isn",
        "it",
        "its",
        "itself",
        "just",
        "let",
        "lets",
        "ll",
        "me",
        "might",
        "mine",
        "more",
        "most",
        "must",
        "mustn",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "often",
        "on",
        "once",
        "only",
        "or",
        "other",
        "otherwise",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "per",
        "please",
        "re",
        "really",
        "s",
        "same",
        "shall",
        "shan",
        "she",
        "should",
        "shouldn",
        "so",
        "some",
        "such",
        "t",
        "than",
        "thank",
        "thanks",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "though",
        "through",
        "thus",
        "to",
        "too",
        "under",
        "until",
        "up",
        "upon",
        "us",
        "ve",
        "very",
        "via",
        "was",
        "wasn",
        "we",
        "were",
        "weren",
        "what",
        "whatever",
        "when",
        "where",
        "whether",
        "which",
        "while",
        "who",
        "whom",
        "whose",
        "why",
        "will",
        "with",
        "within",
        "without",
        "won",
        "would",
        "wouldn",
        "yes",
        "yet",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "d",
        "m",
        "o",
        "y",
        "hi",
        "hello",
        "hey",
        "kindly",
        "okay",
        "ok",
        "sure",
        "want",
        "wants",
        "wanted",
        "like",
        "need",
        "needs",
        "needed",
        "able",
        "tell",
    ]
)

# Words whose final "s" is not a plural ending.
_KEEP_S = frozenset(
    ["news", "series", "species", "analysis", "basis", "status", "gas", "bus", "plus"]
)


@lru_cache(maxsize=1)
def _invisible() -> re.Pattern[str]:
    """Unicode's Default_Ignorable_Code_Point ranges as one character class."""
    ranges = "".join(
        re.escape(chr(lo)) if lo == hi else f"{re.escape(chr(lo))}-{re.escape(chr(hi))}"
        for lo, hi in ucd()["defaultIgnorable"]
    )
    return re.compile(f"[{ranges}]+")


def visible(text: str) -> str:
    """``text`` without the characters no one sees (see the module docstring)."""
    return _invisible().sub("", text) if not text.isascii() else text


def split_camel_case(text: str) -> str:
    """Insert spaces at camelCase humps and acronym boundaries (``HTTPServer``)."""
    return _CAMEL_RE.sub(" ", text)


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """A light suffix stripper: plurals, -ing, -ed, a final -y / silent -e.

    Deliberately conservative (no Porter rules): it only needs to join the forms a
    tool description and a request use for the same thing ("policies" / "policy",
    "updating" / "update") and must not merge unrelated words.
    """
    if len(word) <= 3 or word.isdigit() or word in _KEEP_S:
        return word
    w = _strip_plural(word)
    w = _strip_verb_ending(w)
    if len(w) > 4 and w.endswith("ll"):
        w = w[:-1]
    if len(w) > 3 and w[-1] == "e":
        w = w[:-1]
    elif len(w) > 3 and w[-1] == "y" and w[-2] not in _VOWELS:
        w = w[:-1] + "i"
    return w


_VOWELS = frozenset("aeiouy")


def _strip_plural(w: str) -> str:
    """``policies`` -> ``polici``, ``boxes`` -> ``box``, ``tools`` -> ``tool``."""
    if w.endswith("ies") and len(w) > 4:
        return w[:-2]
    if w.endswith(("sses", "shes", "ches", "xes", "zes")):
        return w[:-2]
    if w.endswith("s") and not w.endswith(("ss", "us", "is", "ics")):
        return w[:-1]
    return w


def _strip_verb_ending(w: str) -> str:
    """``running`` -> ``run``, ``added`` -> ``add``; keeps ``string``, ``embed``."""
    if w.endswith("ing"):
        stem_ = w[:-3]
        if len(stem_) < 3 or not _VOWELS.intersection(stem_):
            return w
    elif w.endswith("ed") and not w.endswith("eed"):
        stem_ = w[:-2]
        doubled = len(stem_) == 3 and stem_[-1] == stem_[-2]
        if len(stem_) < 4 and not doubled:
            return w
    else:
        return w
    if len(stem_) > 3 and stem_[-1] == stem_[-2] and stem_[-1] not in "lsz":
        stem_ = stem_[:-1]
    return stem_


def words(text: str) -> list[str]:
    """Lower-case words of ``text`` with identifiers split (stopwords kept)."""
    return [w.lower() for w in _WORD_RE.findall(split_camel_case(visible(text)))]


def tokenize(text: str) -> list[str]:
    """Stemmed content tokens of ``text``, in order, duplicates kept."""
    return [stem(w) for w in words(text) if w not in STOPWORDS]


def token_set(text: str) -> frozenset[str]:
    """The distinct stemmed content tokens of ``text``."""
    return frozenset(tokenize(text))
