"""Whether a tool's description reads as one account of one tool.

Typical requests pasted together are phrased like a request, so their vector lands
near any request; their sentences stand apart, an honest description's stay close.
A description of ``MIN_SENTENCES`` sentences or more whose sentence vectors' mean
cosine to their centroid (``coherence``) is under ``COHERENCE_LINE`` is
*dispersed*: the tool is embedded without it (``catalog.embedding_text``). The line
is set on the bundled MiniLM (bench/README.md, "A ranking nobody can buy").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

COHERENCE_LINE = 0.5
MIN_SENTENCES = 2
MIN_WORDS = 3
SCAN_CHARS = 1500
# A sentence ends at . ? ! followed by white space, or at a line break (as the
# engine splits a long request).
_BOUNDARY = re.compile(r"(?<=[.?!])\s+|\s*[\r\n]+\s*")


def description_sentences(description: str) -> list[str]:
    """The sentences of ``MIN_WORDS`` words or more in the description's start."""
    parts = (part.strip() for part in _BOUNDARY.split(description[:SCAN_CHARS]))
    return [part for part in parts if len(part.split()) >= MIN_WORDS]


def is_tested(description: str) -> bool:
    """Whether the description has enough sentences for the coherence test."""
    return len(description_sentences(description)) >= MIN_SENTENCES


def coherence(vectors: Any) -> float:
    """Mean cosine of the rows to their own centroid (1.0 for fewer than two)."""
    rows = np.asarray(vectors, dtype=np.float64)
    if len(rows) < MIN_SENTENCES:
        return 1.0
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    rows = np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)
    centre = rows.mean(axis=0)
    length = float(np.linalg.norm(centre))
    if length == 0:
        return 0.0
    return float((rows @ (centre / length)).mean())


def dispersed_descriptions(
    descriptions: Sequence[str], embed: Callable[[list[str]], Any]
) -> list[bool]:
    """For each description, whether it is dispersed; ``embed`` (a document
    batch embedder) is called once for every tested description's sentences."""
    sentences = [description_sentences(text) for text in descriptions]
    tested = [i for i, found in enumerate(sentences) if len(found) >= MIN_SENTENCES]
    out = [False] * len(descriptions)
    if not tested:
        return out
    vectors = np.asarray(embed([s for i in tested for s in sentences[i]]))
    start = 0
    for i in tested:
        end = start + len(sentences[i])
        out[i] = coherence(vectors[start:end]) < COHERENCE_LINE
        start = end
    return out
