"""The static query encoder: trained from tool texts, it lands near MiniLM.

Agreement is checked against the torch reference vectors stored once in
``tests/data/minilm_reference.json``; training uses the demo catalog's tools (never
those texts). Real model, real numpy training, no Django.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from catalog.encoder_texts import ToolText, training_texts
from embeddings import static
from embeddings.backends import local_onnx_encoder
from embeddings.static import (
    StaticQueryEncoder,
    StaticWeights,
    load_encoder,
    save_weights,
    shared_static_encoder,
)
from embeddings.static_training import (
    TrainingSetup,
    build_weights,
    centred,
    piece_table,
)
from tests.minilm_reference import load_reference

ROOT = Path(__file__).resolve().parent.parent.parent
REFERENCE = load_reference()
# The reference texts that read like requests or tools (not the edge cases:
# empty, emoji, other scripts, repeated words).
READABLE = [
    item
    for item in REFERENCE["items"]
    if len(item["text"].split()) >= 4 and item["text"].isascii()
]
DEMO = json.loads((ROOT / "catalog/demo/demo_catalog.json").read_text())["tools"]
SMALL = TrainingSetup(epochs=4)


def demo_tools() -> list[ToolText]:
    return [
        ToolText(t["name"], t.get("description", ""), t.get("parameters")) for t in DEMO
    ]


@pytest.fixture(scope="module")
def trained() -> StaticQueryEncoder:
    texts = training_texts(demo_tools(), seed=SMALL.seed)
    weights = build_weights(texts, local_onnx_encoder(), SMALL, tools=len(DEMO))
    return StaticQueryEncoder(weights, local_onnx_encoder().tokenizer, "static:test")


def untrained() -> StaticQueryEncoder:
    """The starting point: each piece's MiniLM vector alone, no MLP."""
    table = centred(piece_table(local_onnx_encoder()))
    dim = table.shape[1]
    zeros = StaticWeights(table, np.zeros((dim, 1)), np.zeros(1), np.zeros((1, dim)))
    return StaticQueryEncoder(zeros, local_onnx_encoder().tokenizer, "static:start")


def mean_cosine(encoder: StaticQueryEncoder) -> float:
    vectors = encoder.encode_many([item["text"] for item in READABLE])
    reference = np.array([item["query"] for item in READABLE])
    reference /= np.linalg.norm(reference, axis=1, keepdims=True)
    return float(np.mean(np.sum(vectors * reference, axis=1)))


def test_training_texts_come_from_tools_with_request_like_variants():
    texts = training_texts(demo_tools())
    assert len(texts) > 8 * len(DEMO)
    assert len(set(texts)) == len(texts)
    assert any(t.startswith("Can you ") for t in texts)
    assert any(", then " in t for t in texts)  # requests asking for several things
    assert training_texts(demo_tools()) == texts  # the same seed, the same texts


def test_a_trained_encoder_lands_near_the_reference_vectors(trained):
    """Trained on 179 demo tools, it agrees with MiniLM's torch reference vectors
    on requests it never saw far better than the untrained start."""
    start, now = mean_cosine(untrained()), mean_cosine(trained)
    assert now > start + 0.15
    assert now > 0.55


def test_its_vectors_are_unit_length_and_cost_the_same_for_any_length(trained):
    short = trained.encode("book a flight")
    long = trained.encode("book a flight " * 200)  # past MiniLM's 256 pieces
    assert short.dtype == np.float32 and short.shape == (384,)
    assert abs(float(np.linalg.norm(short)) - 1.0) < 1e-5
    assert abs(float(np.linalg.norm(long)) - 1.0) < 1e-5
    assert np.allclose(trained.encode(""), trained.encode("   "))


def test_saved_weights_load_back_with_an_id_naming_the_file(trained, tmp_path):
    path = tmp_path / "models" / "query-static-x.npz"
    save_weights(trained.weights, path)
    again = load_encoder(path, trained.tokenizer)
    assert again.encoder_id.startswith("static:") and len(again.encoder_id) == 19
    text = "send an email to my manager about the delay"
    assert float(again.encode(text) @ trained.encode(text)) > 0.9999
    path.write_bytes(b"not an npz")
    assert shared_static_encoder(path, trained.tokenizer, wait=True) is None


@pytest.fixture
def held_loads(monkeypatch):
    """Each file load waits for ``release`` (the real loader, held back), and the
    file is looked at on every call."""
    release = threading.Event()
    load = static.load_encoder

    def held(path, tokenizer):
        assert release.wait(30)
        return load(path, tokenizer)

    monkeypatch.setattr(static, "load_encoder", held)
    monkeypatch.setattr(static, "RELOAD_SECONDS", 0.0)
    yield release
    release.set()
    static.forget_loaded()


def _serving(path, tokenizer, encoder_id):
    """Ask as a request would until ``encoder_id`` serves (or 30 s pass)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        served = shared_static_encoder(path, tokenizer)
        if served is not None and served.encoder_id == encoder_id:
            return served
        time.sleep(0.01)
    raise AssertionError(f"{encoder_id} never served")


def test_a_request_never_waits_for_a_new_encoder_file_to_load(
    trained, tmp_path, held_loads
):
    path = tmp_path / "models" / "query-static-bg.npz"
    save_weights(trained.weights, path)
    first_id = load_encoder(path, trained.tokenizer).encoder_id
    assert shared_static_encoder(path, trained.tokenizer) is None  # full model
    held_loads.set()
    first = _serving(path, trained.tokenizer, first_id)

    held_loads.clear()
    retrained = dataclasses.replace(trained.weights, w2=trained.weights.w2 * 0.5)
    save_weights(retrained, path)
    second_id = load_encoder(path, trained.tokenizer).encoder_id
    assert second_id != first_id
    assert shared_static_encoder(path, trained.tokenizer) is first  # still serving
    held_loads.set()
    assert _serving(path, trained.tokenizer, second_id).encoder_id == second_id


def test_a_caller_that_waits_gets_the_new_file_at_once(trained, tmp_path):
    path = tmp_path / "models" / "query-static-wait.npz"
    save_weights(trained.weights, path)
    loaded = shared_static_encoder(path, trained.tokenizer, wait=True)
    assert loaded is not None
    assert loaded.encoder_id == load_encoder(path, trained.tokenizer).encoder_id
    static.forget_loaded()
