"""A static query encoder: a word-piece table and a small MLP, numpy only.

It maps a text into all-MiniLM-L6-v2's space at a cost that does not grow with the
text, so a long request's sentences can each be read cheaply; tools are still
embedded by the full model and this encoder's vectors are never stored.
``shared_static_encoder`` loads the latest build and picks up a new one unrestarted.
The rules: docs/how-to/development.md, The embedding model's code.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

FILE_PREFIX = "query-static"
RELOAD_SECONDS = 30.0
# Where the encoder is kept elsewhere than the state directory (the database:
# catalog.services.query_encoder_store), a function registered here brings the
# newest one into the file before the file is looked at: (path, weights digest,
# wait for it).
REFRESHERS: list[Callable[[Path, str, bool], None]] = []
UNKNOWN_PIECE = 100  # [UNK] of the bundled vocabulary: an empty text's one piece


def gelu(x: np.ndarray) -> np.ndarray:
    """The tanh approximation of GELU (what the trainer differentiates)."""
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))


@dataclass(frozen=True)
class StaticWeights:
    """The trained parameters: ``table`` (vocabulary x dim) and the residual MLP
    ``y = h + gelu(h @ w1 + b1) @ w2`` applied to the mean row ``h``."""

    table: np.ndarray
    w1: np.ndarray
    b1: np.ndarray
    w2: np.ndarray
    trained_on: int = 0  # how many tools its training texts came from

    def to_bytes(self) -> bytes:
        """The weights as an ``.npz`` (table stored as float16: half the size,
        cosine to the float32 vectors above 0.9999)."""
        buffer = io.BytesIO()
        np.savez(
            buffer,
            table=self.table.astype(np.float16),
            w1=self.w1,
            b1=self.b1,
            w2=self.w2,
            trained_on=np.asarray(self.trained_on),
        )
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> StaticWeights:
        """Read weights written by ``to_bytes``."""
        with np.load(io.BytesIO(data)) as arrays:
            return cls(
                table=arrays["table"],  # float16: 23 MB held, not 47
                w1=arrays["w1"].astype(np.float32),
                b1=arrays["b1"].astype(np.float32),
                w2=arrays["w2"].astype(np.float32),
                trained_on=int(arrays["trained_on"]),
            )


class StaticQueryEncoder:
    """Texts to L2-normalised float32 vectors in MiniLM's space (thread-safe)."""

    def __init__(self, weights: StaticWeights, tokenizer: Any, encoder_id: str):
        self.weights = weights
        self.tokenizer = tokenizer
        self.encoder_id = encoder_id
        self.dimension = int(weights.table.shape[1])

    def pieces(self, text: str) -> list[int]:
        """The text's word-piece ids without [CLS]/[SEP] (``[UNK]`` if none)."""
        return word_pieces(self.tokenizer, text)

    def encode(self, text: str) -> np.ndarray:
        """One vector for ``text``."""
        return self.encode_many([text])[0]

    def encode_many(self, texts: list[str]) -> np.ndarray:
        """One row per text, in order."""
        w = self.weights
        means = np.stack(
            [w.table[self.pieces(t)].mean(axis=0, dtype=np.float32) for t in texts]
        )
        out = means + gelu(means @ w.w1 + w.b1) @ w.w2
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return (out / np.maximum(norms, 1e-12)).astype(np.float32)


def word_pieces(tokenizer: Any, text: str) -> list[int]:
    """``text``'s word-piece ids without [CLS]/[SEP]; ``[UNK]`` for none, so a
    mean over them always exists (the encoder and its trainer read texts alike)."""
    return list(tokenizer.encode(text.strip()).ids[1:-1]) or [UNKNOWN_PIECE]


def encoder_id_of(data: bytes) -> str:
    """The id of the encoder saved as ``data``: ``static:`` + its SHA-256 prefix."""
    return f"static:{hashlib.sha256(data).hexdigest()[:12]}"


def trained_on(path: Path) -> int:
    """How many tools the encoder at ``path`` learnt from (reads that one array)."""
    with np.load(path) as arrays:
        return int(arrays["trained_on"])


def encoder_file(state_dir: Path, weights_digest: str) -> Path:
    """Where the encoder trained for MiniLM weights ``weights_digest`` lives."""
    return state_dir / "models" / f"{FILE_PREFIX}-{weights_digest[:16]}.npz"


def partial_path(path: Path) -> Path:
    """This process's temporary twin of ``path``, renamed over it when complete:
    two processes writing the same file never write into each other's."""
    return path.with_name(f"{path.name}.{os.getpid()}.partial")


def save_weights(weights: StaticWeights, path: Path) -> None:
    """Write ``weights`` to ``path`` atomically (readers never see half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = partial_path(path)
    partial.write_bytes(weights.to_bytes())
    partial.replace(path)


def load_encoder(path: Path, tokenizer: Any) -> StaticQueryEncoder:
    """The encoder saved at ``path``; its id is the file's content hash."""
    return encoder_from_bytes(path.read_bytes(), tokenizer)


def encoder_from_bytes(data: bytes, tokenizer: Any) -> StaticQueryEncoder:
    """The encoder a file of these bytes holds, exactly as loaded from it."""
    return StaticQueryEncoder(
        StaticWeights.from_bytes(data), tokenizer, encoder_id_of(data)
    )


class _Slot:
    """The last loaded encoder of one file, re-checked at most every interval."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.encoder: StaticQueryEncoder | None = None
        self.stamp: tuple[int, int] | None = None
        self.checked = float("-inf")
        self.loading: threading.Thread | None = None


_SLOTS: dict[Path, _Slot] = {}
_SLOTS_LOCK = threading.Lock()


def _slot(path: Path) -> _Slot:
    with _SLOTS_LOCK:
        return _SLOTS.setdefault(path, _Slot())


def shared_static_encoder(
    path: Path, tokenizer: Any, *, wait: bool = False
) -> StaticQueryEncoder | None:
    """The encoder at ``path`` (loaded once per change of the file), or ``None``
    when there is none: callers then use the full model. A changed file is loaded
    in the background, and this returns what was loaded before, unless ``wait``."""
    slot = _slot(path)
    with slot.lock:
        now = time.monotonic()
        if now - slot.checked >= RELOAD_SECONDS or wait:
            slot.checked = now
            loader = _check(slot, path, tokenizer)
        else:
            loader = slot.loading
    if wait and loader is not None:
        loader.join()
    return slot.encoder


def _check(slot: _Slot, path: Path, tokenizer: Any) -> threading.Thread | None:
    """Look at the file (the caller holds the slot's lock): forget a removed one,
    start loading a changed one; the loading thread, if any."""
    try:
        info = path.stat()
    except OSError:
        slot.encoder, slot.stamp = None, None
        return None
    stamp = (info.st_mtime_ns, info.st_size)
    if stamp != slot.stamp and slot.loading is None:
        slot.loading = threading.Thread(
            target=_load_into,
            args=(slot, path, tokenizer, stamp),
            name="static-encoder-load",
            daemon=True,
        )
        slot.loading.start()
    return slot.loading


def _load_into(slot: _Slot, path: Path, tokenizer: Any, stamp: tuple[int, int]) -> None:
    encoder = _load_or_none(path, tokenizer)
    with slot.lock:
        slot.encoder, slot.stamp, slot.loading = encoder, stamp, None


def _load_or_none(path: Path, tokenizer: Any) -> StaticQueryEncoder | None:
    """``load_encoder``, or ``None`` (logged) for a file it cannot read."""
    try:
        return load_encoder(path, tokenizer)
    except (OSError, ValueError, KeyError) as exc:
        logger.warning("ignoring the static query encoder %s: %s", path, exc)
        return None


def use_loaded(path: Path, encoder: StaticQueryEncoder) -> None:
    """Serve ``encoder`` as the one at ``path`` from now on, without reading the
    file (a build in this process has it in memory already)."""
    info = path.stat()
    slot = _slot(path)
    with slot.lock:
        slot.encoder = encoder
        slot.stamp = (info.st_mtime_ns, info.st_size)
        slot.checked = time.monotonic()


def forget_loaded() -> None:
    """Drop every loaded encoder (tests, and after a build in this process)."""
    with _SLOTS_LOCK:
        _SLOTS.clear()
