"""The bundled MiniLM on onnxruntime: graphs Quiver builds itself, cached, checked.

The graphs are built from the package's weights (no torch, no download) into the
test state directory once; vectors are compared with the ones sentence-transformers
computed for fixed texts (``tests/data/minilm_reference.json``). No Django needed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from embeddings.backends import (
    DOCUMENT_MAX_TOKENS,
    EmbeddingError,
    LocalMiniLMBackend,
    backend_from_settings,
    get_local_backend,
    local_model_path,
    local_onnx_encoder,
)
from embeddings.onnx_encoder import (
    OnnxMiniLM,
    ensure_models,
    ffn_output_nodes_of,
    model_files,
)
from tests.minilm_reference import load_reference

ROOT = Path(__file__).resolve().parent.parent.parent
REFERENCE = load_reference()
TEXTS = [item["text"] for item in REFERENCE["items"]]
QUERY_REF = np.array([item["query"] for item in REFERENCE["items"]])
DOCUMENT_REF = np.array([item["document"] for item in REFERENCE["items"]])


@pytest.fixture(scope="module")
def encoder() -> OnnxMiniLM:
    return local_onnx_encoder()


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1) / (
        np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    )


def test_fp32_graph_queries_agree_with_the_torch_reference(
    encoder: OnnxMiniLM,
) -> None:
    ours = np.stack([encoder.encode(text, precision="fp32") for text in TEXTS])
    assert cosines(ours, QUERY_REF).min() >= 0.9999


def test_fp32_graph_document_batches_agree_with_the_torch_reference(
    encoder: OnnxMiniLM,
) -> None:
    ours = encoder.encode_batch(TEXTS, batch_size=4, max_length=DOCUMENT_MAX_TOKENS + 2)
    assert ours.dtype == np.float32 and ours.shape == (len(TEXTS), 384)
    assert cosines(ours, DOCUMENT_REF).min() >= 0.9999


def test_int8_graph_queries_stay_within_0_985_of_the_torch_reference(
    encoder: OnnxMiniLM,
) -> None:
    ours = np.stack([encoder.encode(text, precision="int8") for text in TEXTS])
    agreement = cosines(ours, QUERY_REF)
    # 0.988 at worst on an AVX2-only CPU (onnx_graph.quantize_int8), 0.990 with VNNI
    assert agreement.min() >= 0.985
    assert agreement.mean() >= 0.995
    assert agreement.max() < 0.99999  # it really is the quantised graph


def test_the_backend_embeds_documents_in_fp32_and_queries_in_int8_by_default() -> None:
    backend = LocalMiniLMBackend(batch_size=8, cache_size=0)
    documents = backend.embed_documents(TEXTS)
    assert cosines(documents, DOCUMENT_REF).min() >= 0.9999
    assert backend.query_precision == "int8"
    fast = np.stack([backend.embed_query(text) for text in TEXTS])
    assert cosines(fast, QUERY_REF).min() >= 0.985
    assert cosines(fast, QUERY_REF).max() < 0.99999  # really the quantised graph
    exact = LocalMiniLMBackend(cache_size=0, query_precision="fp32")
    queries = np.stack([exact.embed_query(text) for text in TEXTS])
    assert cosines(queries, QUERY_REF).min() >= 0.9999


def test_the_numpy_engine_and_the_onnx_engine_give_the_same_documents() -> None:
    numpy_engine = LocalMiniLMBackend(engine="numpy", batch_size=8)
    onnx_engine = LocalMiniLMBackend(engine="onnx", batch_size=8)
    both = numpy_engine.embed_documents(TEXTS), onnx_engine.embed_documents(TEXTS)
    assert cosines(*both).min() >= 0.99999
    assert numpy_engine.query_precision == "fp32"


def test_settings_choose_the_engine_and_reject_an_unknown_one() -> None:
    assert backend_from_settings({"ENGINE": "onnx"}) is get_local_backend()
    numpy_engine = backend_from_settings({"ENGINE": "numpy", "THREADS": 1})
    assert isinstance(numpy_engine, LocalMiniLMBackend)
    assert numpy_engine.engine == "numpy"
    with pytest.raises(EmbeddingError, match="unknown local ENGINE"):
        backend_from_settings({"ENGINE": "torch"})
    with pytest.raises(ValueError, match="query_precision"):
        LocalMiniLMBackend(query_precision="int4")


def test_graphs_are_cached_in_the_state_dir_and_not_rebuilt(
    encoder: OnnxMiniLM,
) -> None:
    files = encoder.files()
    assert files["fp32"].parent == encoder.state_dir / "models"
    assert files["fp32"].is_file() and files["int8"].is_file()
    assert files["int8"].stat().st_size < 0.8 * files["fp32"].stat().st_size
    built = {name: path.stat().st_mtime_ns for name, path in files.items()}
    assert ensure_models(local_model_path(), encoder.state_dir) == files
    assert {name: path.stat().st_mtime_ns for name, path in files.items()} == built


def test_graph_names_follow_the_weights_hash(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    for folder, content in ((one, b"weights one"), (two, b"weights two")):
        folder.mkdir()
        (folder / "model.safetensors").write_bytes(content)
    assert model_files(one, tmp_path) != model_files(two, tmp_path)
    assert model_files(one, tmp_path) == model_files(one, tmp_path)


def test_int8_keeps_only_the_feed_forward_outputs_in_fp32(encoder: OnnxMiniLM) -> None:
    import onnx

    fp32 = onnx.load(str(encoder.files()["fp32"]), load_external_data=False)
    kept = ffn_output_nodes_of(fp32)
    assert len(kept) == 6  # one per layer
    int8 = onnx.load(str(encoder.files()["int8"]), load_external_data=False)
    ops = [node.op_type for node in int8.graph.node]
    assert ops.count("MatMulInteger") + ops.count("MatMulIntegerToFloat") == 6 * 5
    assert "torch" not in sys.modules


def test_a_fresh_state_dir_is_built_once_by_two_processes_at_once(
    tmp_path: Path,
) -> None:
    """Two processes start on an empty state dir: one builds, both get the graphs."""
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from embeddings.backends import local_model_path\n"
        "from embeddings.onnx_encoder import OnnxMiniLM\n"
        "encoder = OnnxMiniLM(local_model_path(), Path(sys.argv[1]))\n"
        "print(float(encoder.encode('weather in Paris') @ encoder.encode("
        "'weather in Paris', precision='fp32')))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(tmp_path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=ROOT,
            env=env,
        )
        for _ in range(2)
    ]
    outputs = [run.communicate(timeout=300)[0] for run in runs]
    assert [run.returncode for run in runs] == [0, 0]
    assert all(float(out) >= 0.99 for out in outputs)
    built = sorted(path.name for path in (tmp_path / "models").glob("*.onnx"))
    assert len(built) == 2 and not list((tmp_path / "models").glob("*.tmp*"))


def test_stale_graphs_are_removed_when_the_graphs_are_rebuilt(tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    stale = models / "all-MiniLM-L6-v2-b0-0123456789abcdef-fp32.onnx"
    stale.write_bytes(b"an old build")
    files = ensure_models(local_model_path(), tmp_path)
    assert not stale.exists()
    assert sorted(models.glob("*.onnx")) == sorted(files.values())


def test_an_unwritable_state_dir_falls_back_to_a_private_temp_dir(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("a file where the state dir should be")
    encoder = OnnxMiniLM(local_model_path(), blocked)
    vector = encoder.encode("book a flight", precision="fp32")
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5
    assert not str(encoder.files()["fp32"]).startswith(str(blocked))
    assert "cannot cache ONNX graphs" in caplog.text


def test_an_empty_batch_gives_an_empty_matrix(encoder: OnnxMiniLM) -> None:
    assert encoder.encode_batch([]).shape == (0, 384)
    with pytest.raises(ValueError, match="precision"):
        encoder.session("fp16")
