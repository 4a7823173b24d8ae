"""Training the static query encoder (``embeddings.static``), numpy only.

1. **Texts.** The caller's: the catalog makes them from tool definitions only,
   never requests (catalog.encoder_texts), about ten texts per tool.
2. **Targets.** Each text's MiniLM vector (fp32 graph, read up to 256 pieces).
3. **Start.** Each word piece's row begins as MiniLM's vector of that piece alone,
   centred: tokens the texts never use still land somewhere sensible.
4. **Fit.** Adam on ``1 - cos(encoder(text), target)``, rows updated lazily
   (only the pieces of the batch), a fixed seed: the same texts give the same
   weights on one machine.

A 4,000-tool catalog gives ~40,000 texts: ~100 s of targets on one core and ~10
s per epoch (``bench/README.md``, "Static query encoder").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from embeddings.static import (
    UNKNOWN_PIECE,
    StaticWeights,
    gelu,
    partial_path,
    word_pieces,
)

MAX_PIECES = 128

Progress = Callable[[str], None]


def centred(table: np.ndarray) -> np.ndarray:
    """The single-piece table minus its mean row (the part every row shares)."""
    table = np.asarray(table, dtype=np.float32)
    return table - table.mean(axis=0, keepdims=True)


class _Adam:
    """Adam for one parameter; ``rows`` updates only those rows (lazy, sparse)."""

    def __init__(self, shape: tuple[int, ...], lr: float) -> None:
        self.m = np.zeros(shape, np.float32)
        self.v = np.zeros(shape, np.float32)
        self.lr = lr
        self.t = 0

    def step(
        self, param: np.ndarray, grad: np.ndarray, rows: np.ndarray | None
    ) -> None:
        self.t += 1
        b1, b2 = 0.9, 0.999
        at = slice(None) if rows is None else rows
        m = b1 * self.m[at] + (1 - b1) * grad
        v = b2 * self.v[at] + (1 - b2) * grad * grad
        self.m[at], self.v[at] = m, v
        scale = self.lr / (1 - b1**self.t)
        param[at] -= scale * m / (np.sqrt(v / (1 - b2**self.t)) + 1e-8)


def _gelu_grad(x: np.ndarray) -> np.ndarray:
    t = np.tanh(0.7978845608 * (x + 0.044715 * x**3))
    inner = 0.7978845608 * (1 + 3 * 0.044715 * x * x)
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * inner


@dataclass
class TrainingSetup:
    """Hyper-parameters (the defaults are the measured ones)."""

    epochs: int = 6
    batch_size: int = 128
    hidden: int = 768
    table_lr: float = 3e-3
    mlp_lr: float = 1e-3
    seed: int = 0


def _padded(pieces: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    width = max(len(p) for p in pieces)
    ids = np.zeros((len(pieces), width), np.int64)
    mask = np.zeros((len(pieces), width), np.float32)
    for row, seq in enumerate(pieces):
        ids[row, : len(seq)] = seq
        mask[row, : len(seq)] = 1.0
    return ids, mask


class _Trainer:
    """One training run: the weights and their optimisers."""

    def __init__(self, table: np.ndarray, setup: TrainingSetup) -> None:
        rng = np.random.default_rng(setup.seed)
        dim = table.shape[1]
        self.rng = rng
        self.table = np.array(table, dtype=np.float32)
        self.w1 = (rng.standard_normal((dim, setup.hidden)) * 0.02).astype(np.float32)
        self.b1 = np.zeros(setup.hidden, np.float32)
        self.w2 = np.zeros((setup.hidden, dim), np.float32)
        self.opt = {
            "table": _Adam(self.table.shape, setup.table_lr),
            "w1": _Adam(self.w1.shape, setup.mlp_lr),
            "b1": _Adam(self.b1.shape, setup.mlp_lr),
            "w2": _Adam(self.w2.shape, setup.mlp_lr),
        }

    def step(self, pieces: list[Sequence[int]], targets: np.ndarray) -> float:
        """One Adam step on a batch; returns its summed loss."""
        ids, mask = _padded(pieces)
        count = mask.sum(axis=1, keepdims=True)
        h = (self.table[ids] * mask[..., None]).sum(axis=1) / count
        z = h @ self.w1 + self.b1
        a = gelu(z)
        y = h + a @ self.w2
        norm = np.linalg.norm(y, axis=1, keepdims=True)
        u = y / norm
        cos = (u * targets).sum(axis=1, keepdims=True)
        grad_u = -targets / len(pieces)
        grad_y = (grad_u - (grad_u * u).sum(axis=1, keepdims=True) * u) / norm
        grad_z = (grad_y @ self.w2.T) * _gelu_grad(z)
        grad_h = grad_y + grad_z @ self.w1.T
        self._table_step(ids, mask, grad_h / count)
        self.opt["w1"].step(self.w1, h.T @ grad_z, None)
        self.opt["b1"].step(self.b1, grad_z.sum(axis=0), None)
        self.opt["w2"].step(self.w2, a.T @ grad_y, None)
        return float((1 - cos).sum())

    def _table_step(self, ids: np.ndarray, mask: np.ndarray, grad: np.ndarray) -> None:
        per_piece = (grad[:, None, :] * mask[..., None]).reshape(-1, grad.shape[1])
        rows, where = np.unique(ids.reshape(-1), return_inverse=True)
        summed = np.zeros((len(rows), grad.shape[1]), np.float32)
        np.add.at(summed, where, per_piece)
        self.opt["table"].step(self.table, summed, rows)

    def weights(self) -> StaticWeights:
        return StaticWeights(self.table, self.w1, self.b1, self.w2)


def train(
    pieces: Sequence[Sequence[int]],
    targets: np.ndarray,
    table: np.ndarray,
    setup: TrainingSetup | None = None,
    progress: Progress | None = None,
) -> StaticWeights:
    """Fit the encoder so each text's vector lands on its target (unit rows)."""
    setup = setup or TrainingSetup()
    if len(pieces) != len(targets) or not len(pieces):
        raise ValueError("training needs one target per text, and some texts")
    trainer = _Trainer(table, setup)
    clipped = [list(p[:MAX_PIECES]) or [UNKNOWN_PIECE] for p in pieces]
    for epoch in range(setup.epochs):
        order = trainer.rng.permutation(len(clipped))
        loss = 0.0
        for start in range(0, len(order), setup.batch_size):
            batch = order[start : start + setup.batch_size]
            loss += trainer.step([clipped[i] for i in batch], targets[batch])
        if progress:
            mean = loss / len(clipped)
            progress(f"epoch {epoch + 1}/{setup.epochs}: mean 1 - cosine {mean:.4f}")
    return trainer.weights()


# ------------------------------------------------------------------------ building


def single_piece_table(
    encode_batch: Callable[[np.ndarray], np.ndarray], size: int
) -> np.ndarray:
    """Each word piece's vector alone (``[CLS] piece [SEP]``), ``size`` rows.

    ``encode_batch`` takes an (n, 3) id matrix and returns n sentence vectors."""
    chunks = []
    for start in range(0, size, 2048):
        piece = np.arange(start, min(size, start + 2048), dtype=np.int64)
        ids = np.stack([np.full_like(piece, 101), piece, np.full_like(piece, 102)], 1)
        chunks.append(np.asarray(encode_batch(ids), dtype=np.float32))
    return np.concatenate(chunks)


def piece_table(onnx: Any) -> np.ndarray:
    """``single_piece_table`` of an ``OnnxMiniLM``, kept in its state directory
    (``pieces-<weights hash>.npy``): ~15 s to compute, read back in well under 1."""
    path = onnx.state_dir / "models" / f"pieces-{onnx.weights_digest[:16]}.npy"
    if path.exists():
        return np.load(path)
    session = onnx.session("fp32", 1)

    def encode_ids(ids: np.ndarray) -> np.ndarray:
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        return np.asarray(session.run(None, feed)[0])

    table = single_piece_table(encode_ids, onnx.tokenizer.get_vocab_size())
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = partial_path(path)
    with partial.open("wb") as handle:
        np.save(handle, table)
    partial.replace(path)
    return table


def build_weights(
    texts: Sequence[str],
    onnx: Any,
    setup: TrainingSetup | None = None,
    progress: Progress | None = None,
    *,
    tools: int,
) -> StaticWeights:
    """Train an encoder on ``texts`` (made from ``tools`` tools) against ``onnx``
    (an ``OnnxMiniLM``)."""
    say = progress or (lambda _message: None)
    if not texts:
        raise ValueError("no tool texts to train the static query encoder on")
    say(f"word-piece table: {onnx.tokenizer.get_vocab_size()} pieces")
    table = centred(piece_table(onnx))
    say(f"targets: {len(texts)} texts from {tools} tools")
    targets = onnx.encode_batch(list(texts), 64, 256, "fp32", 1)
    pieces = [word_pieces(onnx.tokenizer, t) for t in texts]
    weights = train(pieces, targets, table, setup, say)
    return replace(weights, trained_on=tools)
