"""What every embedding backend is: the protocol, its error, unit-length rows."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol, runtime_checkable

import numpy as np


class EmbeddingError(RuntimeError):
    """An embedding could not be computed (HTTP error, bad payload, bad config)."""


@runtime_checkable
class EmbeddingBackend(Protocol):
    """What the catalog and the selection engine need from an embedding model."""

    @property
    def model_id(self) -> str:
        """Stable name of the model, e.g. ``local:all-MiniLM-L6-v2``; part of hashes."""
        ...

    @property
    def dimension(self) -> int:
        """Length of every vector this backend returns."""
        ...

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        """One float32, L2-normalised row per text, in input order."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """One float32, L2-normalised vector of length ``dimension``."""
        ...


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    """Return ``matrix`` as float32 with unit-length rows (zero rows stay zero)."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return matrix / np.maximum(norms, np.float32(1e-12))


def batches(items: Sequence[int], size: int) -> Iterator[Sequence[int]]:
    """Consecutive slices of ``items`` of at most ``size`` elements."""
    for start in range(0, len(items), size):
        yield items[start : start + size]
