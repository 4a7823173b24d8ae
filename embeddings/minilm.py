"""A pure-numpy forward pass of all-MiniLM-L6-v2: queries and document batches.

Transformers' ``BertModel`` spends a short query's time on framework overhead around
a handful of small matrix products; the same network in plain numpy embeds a query
several times faster, and neither the web nor the worker processes need torch. It
computes the standard BERT encoder exactly as the reference does (tested to agree
with sentence-transformers).
The rules: docs/how-to/development.md, The embedding model's code.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

_F32 = np.float32
_MASKED = np.float32(-1e9)


# Abramowitz & Stegun 7.1.26: erf(z) = 1 - t*P(t)*exp(-z^2), t = 1/(1 + p z), z >= 0.
# |error| < 1.5e-7 in exact arithmetic (under 1e-6 in float32), the size of the
# rounding already present in the float32 matmuls around it: sentence embeddings
# still match the reference to cosine > 0.99999. It is faster than
# scipy.special.erf here and keeps this module numpy-only.
_AS_P = np.float32(0.3275911)
_AS_A = tuple(
    np.float32(c)
    for c in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)
)
_INV_SQRT2 = np.float32(1.0 / np.sqrt(2.0))


def erf(x: np.ndarray) -> np.ndarray:
    """Vectorised float32 error function (A&S 7.1.26), returned as a new array."""
    z = np.abs(x, dtype=_F32)
    t = z * _AS_P
    t += 1.0
    np.reciprocal(t, out=t)
    poly = t * _AS_A[0]
    for coefficient in _AS_A[1:]:
        poly += coefficient
        poly *= t
    np.square(z, out=z)
    np.negative(z, out=z)
    np.exp(z, out=z)
    poly *= z
    np.subtract(1.0, poly, out=poly)
    return np.copysign(poly, x, out=poly)


def gelu_(x: np.ndarray) -> np.ndarray:
    """Exact (erf) GELU, ``0.5 x (1 + erf(x / sqrt 2))``, computed in place on ``x``.

    BERT's ``hidden_act`` is ``"gelu"``, the erf form, not the tanh approximation.
    """
    cdf = erf(x * _INV_SQRT2)
    cdf += 1.0
    cdf *= 0.5
    x *= cdf
    return x


def layer_norm_(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> None:
    """LayerNorm of each column of ``x`` (hidden, tokens), in place.

    Population variance, like torch. Means are taken as a product with a ``1/n``
    row, one BLAS call, cheaper than ``mean`` on the small matrices of a query.
    ``gamma`` and ``beta`` are (hidden, 1) columns.
    """
    height = x.shape[0]
    average = np.full((1, height), 1.0 / height, dtype=_F32)
    x -= average @ x
    var = average @ np.square(x)
    var += eps
    np.sqrt(var, out=var)
    x /= var
    x *= gamma
    x += beta


@dataclass(frozen=True)
class _Layer:
    """One transformer layer's weights, for column-major activations.

    Activations are kept as (hidden, tokens) matrices and every projection is
    ``W @ X`` with ``W`` in torch's (out, in) layout. For the few-token matrices of
    a query, OpenBLAS runs this orientation up to twice as fast as ``X @ W.T``.
    Biases and LayerNorm parameters are (n, 1) columns that broadcast over tokens.
    """

    qkv_w: np.ndarray  # (3*hidden, hidden): Q rows pre-scaled by 1/sqrt(head_dim)
    qkv_b: np.ndarray
    out_w: np.ndarray
    out_b: np.ndarray
    ln1_g: np.ndarray
    ln1_b: np.ndarray
    ff1_w: np.ndarray
    ff1_b: np.ndarray
    ff2_w: np.ndarray
    ff2_b: np.ndarray
    ln2_g: np.ndarray
    ln2_b: np.ndarray


class _Padded(NamedTuple):
    """A padded batch as every layer sees it: ``batch`` sequences of ``width``
    tokens, and the attention bias that hides the padding (None: none padded)."""

    batch: int
    width: int
    bias: np.ndarray | None


def _contiguous(array: np.ndarray) -> np.ndarray:
    """A C-contiguous float32 copy, so BLAS never has to re-layout it per call."""
    return np.ascontiguousarray(array, dtype=_F32)


def _column(array: np.ndarray) -> np.ndarray:
    """A vector as a contiguous float32 (n, 1) column."""
    return _contiguous(array.reshape(-1, 1))


def _build_layer(w: dict[str, np.ndarray], i: int, head_dim: int) -> _Layer:
    """Fuse layer ``i``'s Q, K, V into one matrix and reshape its other tensors."""
    p = f"encoder.layer.{i}."
    scale = _F32(1.0 / np.sqrt(head_dim))
    q_w = w[p + "attention.self.query.weight"] * scale
    q_b = w[p + "attention.self.query.bias"] * scale
    qkv_w = np.concatenate(
        [q_w, w[p + "attention.self.key.weight"], w[p + "attention.self.value.weight"]]
    )
    qkv_b = np.concatenate(
        [q_b, w[p + "attention.self.key.bias"], w[p + "attention.self.value.bias"]]
    )
    return _Layer(
        qkv_w=_contiguous(qkv_w),
        qkv_b=_column(qkv_b),
        out_w=_contiguous(w[p + "attention.output.dense.weight"]),
        out_b=_column(w[p + "attention.output.dense.bias"]),
        ln1_g=_column(w[p + "attention.output.LayerNorm.weight"]),
        ln1_b=_column(w[p + "attention.output.LayerNorm.bias"]),
        ff1_w=_contiguous(w[p + "intermediate.dense.weight"]),
        ff1_b=_column(w[p + "intermediate.dense.bias"]),
        ff2_w=_contiguous(w[p + "output.dense.weight"]),
        ff2_b=_column(w[p + "output.dense.bias"]),
        ln2_g=_column(w[p + "output.LayerNorm.weight"]),
        ln2_b=_column(w[p + "output.LayerNorm.bias"]),
    )


def _load_weights(path: Path) -> dict[str, np.ndarray]:
    """The safetensors tensors as numpy arrays, with any ``bert.`` prefix removed."""
    from safetensors.numpy import load_file

    raw = load_file(str(path / "model.safetensors"))
    return {key.removeprefix("bert."): value for key, value in raw.items()}


def _load_tokenizer(path: Path, max_length: int) -> Any:
    """The model's fast tokenizer: truncating at ``max_length``, never padding."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_length)
    return tokenizer


def load_tokenizer(model_dir: str | Path) -> Any:
    """The tokenizer of a sentence-transformers folder, cut like the reference."""
    path = Path(model_dir)
    return _load_tokenizer(path, _read_config(path, None).max_seq_length)


def token_ids(tokenizer: Any, text: str, max_length: int | None = None) -> np.ndarray:
    """Word-piece ids of ``text`` with [CLS]/[SEP]; see ``MiniLMEncoder.token_ids``."""
    if max_length is not None and max_length < 2:
        raise ValueError("max_length must be at least 2")
    ids = tokenizer.encode(text.strip()).ids
    if max_length is not None and len(ids) > max_length:
        ids = ids[: max_length - 1] + ids[-1:]
    return np.asarray(ids, dtype=np.intp)


def _read_json(path: Path) -> dict[str, Any]:
    """A small JSON config file, or ``{}`` when it does not exist."""
    if not path.exists():
        return {}
    with path.open(encoding="utf-8") as handle:
        data = json.load(handle)
    return data if isinstance(data, dict) else {}


@dataclass(frozen=True)
class _Config:
    """The few BERT hyper-parameters the forward pass needs."""

    hidden: int
    heads: int
    eps: float
    max_seq_length: int

    @property
    def head_dim(self) -> int:
        """Width of one attention head (hidden / heads)."""
        return self.hidden // self.heads


def _read_config(path: Path, max_seq_length: int | None) -> _Config:
    """Hyper-parameters from config.json and sentence_bert_config.json."""
    bert = _read_json(path / "config.json")
    if bert.get("hidden_act", "gelu") != "gelu":
        raise ValueError(f"unsupported activation {bert.get('hidden_act')!r}")
    st_config = _read_json(path / "sentence_bert_config.json")
    limit = max_seq_length or st_config.get("max_seq_length") or 256
    limit = min(int(limit), int(bert.get("max_position_embeddings", 512)))
    return _Config(
        hidden=int(bert["hidden_size"]),
        heads=int(bert["num_attention_heads"]),
        eps=float(bert.get("layer_norm_eps", 1e-12)),
        max_seq_length=limit,
    )


class MiniLMEncoder:
    """Sentence embeddings from a BERT checkpoint with numpy only (no torch).

    Build it with ``MiniLMEncoder.load(model_dir)``; ``encode`` embeds one text,
    ``encode_batch`` many. Instances hold only read-only weights, so one instance
    can serve many threads at once.
    """

    def __init__(
        self, weights: dict[str, np.ndarray], tokenizer: Any, config: _Config
    ) -> None:
        self.config = config
        self.tokenizer = tokenizer
        self.dimension = config.hidden
        self.word = _contiguous(weights["embeddings.word_embeddings.weight"])
        self.position = _contiguous(weights["embeddings.position_embeddings.weight"])
        self.token_type0 = _contiguous(
            weights["embeddings.token_type_embeddings.weight"][0]
        )
        self.emb_ln_g = _column(weights["embeddings.LayerNorm.weight"])
        self.emb_ln_b = _column(weights["embeddings.LayerNorm.bias"])
        prefix = "encoder.layer."
        count = 1 + max(
            int(key.split(".")[2]) for key in weights if key.startswith(prefix)
        )
        self.layers = [_build_layer(weights, i, config.head_dim) for i in range(count)]

    @classmethod
    def load(
        cls, model_dir: str | Path, max_seq_length: int | None = None
    ) -> MiniLMEncoder:
        """Load weights, tokenizer and config from a sentence-transformers folder."""
        path = Path(model_dir)
        config = _read_config(path, max_seq_length)
        tokenizer = _load_tokenizer(path, config.max_seq_length)
        return cls(_load_weights(path), tokenizer, config)

    def token_ids(self, text: str, max_length: int | None = None) -> np.ndarray:
        """Word-piece ids of ``text`` with [CLS]/[SEP], truncated like the reference.

        ``max_length`` (at least 2, at most the model's ``max_seq_length``) cuts
        shorter: the first ``max_length - 2`` pieces, then [SEP], exactly what the
        tokenizer's own truncation at that length gives for a single text.
        """
        return token_ids(self.tokenizer, text, max_length)

    def encode(self, text: str, max_length: int | None = None) -> np.ndarray:
        """One L2-normalised float32 vector of length ``dimension``."""
        ids = self.token_ids(text, max_length)
        hidden = self._forward(ids[None, :], None)
        return _normalised(hidden.mean(axis=1))

    def encode_batch(
        self, texts: list[str], batch_size: int = 32, max_length: int | None = None
    ) -> np.ndarray:
        """One normalised row per text, in input order; batches sorted by length.

        Sorting keeps padding small; padded positions are masked out of attention
        and of the mean, so a text's vector does not depend on its batch.
        """
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        out = np.zeros((len(texts), self.dimension), dtype=_F32)
        encoded = [self.token_ids(text, max_length) for text in texts]
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i]))
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            out[chunk] = self._encode_padded([encoded[i] for i in chunk])
        return out

    def _encode_padded(self, sequences: list[np.ndarray]) -> np.ndarray:
        """Pad a batch, run it, mean-pool over the real tokens and normalise."""
        width = max(len(seq) for seq in sequences)
        ids = np.zeros((len(sequences), width), dtype=np.intp)
        mask = np.zeros((len(sequences), width), dtype=_F32)
        for row, seq in enumerate(sequences):
            ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1.0
        hidden = self._forward(ids, mask).reshape(self.dimension, len(sequences), width)
        summed = np.einsum("hbn,bn->bh", hidden, mask)
        summed /= mask.sum(axis=1, keepdims=True)
        return _normalised(summed)

    def _forward(self, ids: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
        """Final hidden states as a (hidden, batch*tokens) matrix for padded ``ids``.

        Column ``b * tokens + t`` is token ``t`` of sequence ``b``; ``mask`` (batch,
        tokens) marks real tokens and may be ``None`` when nothing is padded.
        """
        batch, width = ids.shape
        rows = self.word[ids.reshape(-1)].reshape(batch, width, self.dimension)
        rows += self.position[:width]
        rows += self.token_type0
        x = _contiguous(rows.reshape(batch * width, self.dimension).T)
        layer_norm_(x, self.emb_ln_g, self.emb_ln_b, self.config.eps)
        bias = None if mask is None else ((1.0 - mask) * _MASKED)[:, None, None, :]
        padded = _Padded(batch, width, bias)
        for layer in self.layers:
            x = self._layer(x, layer, padded)
        return x

    def _layer(self, x: np.ndarray, layer: _Layer, padded: _Padded) -> np.ndarray:
        """One encoder layer on (hidden, batch*tokens) activations."""
        eps = self.config.eps
        attended = layer.out_w @ self._attention(x, layer, padded)
        attended += layer.out_b
        attended += x
        layer_norm_(attended, layer.ln1_g, layer.ln1_b, eps)
        inner = layer.ff1_w @ attended
        inner += layer.ff1_b
        gelu_(inner)
        out = layer.ff2_w @ inner
        out += layer.ff2_b
        out += attended
        layer_norm_(out, layer.ln2_g, layer.ln2_b, eps)
        return out

    def _attention(self, x: np.ndarray, layer: _Layer, padded: _Padded) -> np.ndarray:
        """Multi-head self-attention; returns the (hidden, batch*tokens) context."""
        (batch, width, bias), heads = padded, self.config.heads
        qkv = layer.qkv_w @ x
        qkv += layer.qkv_b
        qkv = qkv.reshape(3, heads, self.config.head_dim, batch, width)
        qkv = qkv.transpose(0, 3, 1, 2, 4)  # (3, batch, heads, head_dim, tokens)
        query, key, value = qkv[0], qkv[1], qkv[2]
        scores = query.swapaxes(-1, -2) @ key  # (batch, heads, queries, keys)
        if bias is not None:
            scores += bias
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        context = value @ scores.swapaxes(-1, -2)  # (batch, heads, head_dim, queries)
        context = context.transpose(1, 2, 0, 3)
        return context.reshape(self.dimension, batch * width)


def _normalised(vectors: np.ndarray) -> np.ndarray:
    """float32 copy of ``vectors`` with unit L2 norm along the last axis."""
    vectors = vectors.astype(_F32, copy=False)
    norm = np.sqrt(np.einsum("...i,...i->...", vectors, vectors))[..., None]
    return vectors / np.maximum(norm, _F32(1e-12))


_SHARED_LOCK = threading.Lock()
_SHARED: dict[str, MiniLMEncoder] = {}


def shared_encoder(model_dir: str | Path) -> MiniLMEncoder:
    """The process-wide encoder for ``model_dir`` (loaded once, under a lock)."""
    key = str(Path(model_dir).resolve())
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = MiniLMEncoder.load(key)
        return _SHARED[key]
