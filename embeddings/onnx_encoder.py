"""The bundled MiniLM run by onnxruntime, from graphs Quiver builds itself.

``ensure_models`` writes an fp32 graph (documents) and an int8 one (queries) from
the package's weights on first use, once across processes, into the state
directory, or reads graphs built ahead of time: no download, no torch.
The rules: docs/how-to/development.md, The embedding model's code.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import logging
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from embeddings.minilm import load_tokenizer, token_ids
from embeddings.onnx_graph import ffn_output_nodes as ffn_output_nodes_of
from embeddings.onnx_graph import read_config

__all__ = [
    "OnnxMiniLM",
    "ensure_graphs",
    "ensure_models",
    "ffn_output_nodes_of",
    "file_lock",
    "model_files",
]

logger = logging.getLogger(__name__)

MODEL_NAME = "all-MiniLM-L6-v2"
# Bump when onnx_graph writes a different graph: cached files are then rebuilt.
BUILD_VERSION = 2  # 2: 7-bit int8 weights (onnx_graph.quantize_int8)
PRECISIONS = ("fp32", "int8")


def default_state_dir() -> Path:
    """``QUIVER_STATE_DIR``, or ``.quiver/`` at the repository root."""
    configured = os.environ.get("QUIVER_STATE_DIR")
    if configured:
        return Path(configured)
    return Path(__file__).resolve().parents[1] / ".quiver"


def weights_hash(model_dir: Path) -> str:
    """SHA-256 (hex) of the model's ``model.safetensors``; hashed once per version
    of the file (~0.15 s for the bundled 90 MB)."""
    path = model_dir / "model.safetensors"
    info = path.stat()
    return _file_sha256(path.resolve(), info.st_mtime_ns, info.st_size, info.st_ino)


@functools.lru_cache(maxsize=8)
def _file_sha256(path: Path, mtime_ns: int, size: int, inode: int) -> str:
    """SHA-256 of ``path``, cached per (mtime, size, inode): a new file is a miss."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def model_files(model_dir: Path, folder: Path) -> dict[str, Path]:
    """Where the fp32 and int8 graphs of these weights live in ``folder``."""
    stem = f"{MODEL_NAME}-b{BUILD_VERSION}-{weights_hash(model_dir)[:16]}"
    return {precision: folder / f"{stem}-{precision}.onnx" for precision in PRECISIONS}


@contextlib.contextmanager
def file_lock(lock_path: Path, wait: bool = True) -> Iterator[bool]:
    """Hold an exclusive advisory lock on ``lock_path``: blocks until it is free,
    or with ``wait=False`` yields False at once when another process holds it."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _build(model_dir: Path, files: dict[str, Path]) -> None:
    """Write both graphs in a child process, each appearing by an atomic rename.

    A child keeps the build's memory (~600 MB peak: weights, protobufs, the
    quantiser) and the quantiser's log lines out of the web or worker process.
    """
    suffix = f".tmp{os.getpid()}"
    partial = {name: path.with_suffix(suffix) for name, path in files.items()}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "embeddings.onnx_graph",
            str(model_dir),
            str(partial["fp32"]),
            str(partial["int8"]),
        ],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
        check=False,
    )
    if done.returncode != 0:
        for path in partial.values():
            path.unlink(missing_ok=True)
        raise RuntimeError(f"building the ONNX graphs failed: {done.stderr[-2000:]}")
    for name, path in files.items():
        os.replace(partial[name], path)


def _remove_stale(folder: Path, keep: dict[str, Path]) -> None:
    """Delete graphs of other weights or builder versions (called under the lock)."""
    for path in folder.glob(f"{MODEL_NAME}-*.onnx"):
        if path not in keep.values():
            path.unlink(missing_ok=True)


def ensure_models(model_dir: str | Path, state_dir: Path) -> dict[str, Path]:
    """The paths of the fp32 and int8 graphs in ``<state_dir>/models``, built first
    if missing or stale."""
    return ensure_graphs(model_dir, state_dir / "models")


def prebuilt_graphs(model_dir: str | Path) -> dict[str, Path] | None:
    """The graphs of these weights in ``QUIVER_MODEL_GRAPHS_DIR``, when it is set
    and holds both; None otherwise (that folder is only ever read)."""
    configured = os.environ.get("QUIVER_MODEL_GRAPHS_DIR")
    if not configured:
        return None
    files = model_files(Path(model_dir), Path(configured))
    return files if all(path.is_file() for path in files.values()) else None


def ensure_graphs(model_dir: str | Path, folder: Path) -> dict[str, Path]:
    """The paths of the fp32 and int8 graphs in ``folder``, built first if missing
    or stale."""
    model_dir = Path(model_dir)
    files = model_files(model_dir, folder)
    if all(path.exists() for path in files.values()):
        return files
    folder.mkdir(parents=True, exist_ok=True)
    with file_lock(folder / f"{MODEL_NAME}.lock"):
        if not all(path.exists() for path in files.values()):
            logger.info("building the ONNX graphs of %s in %s", MODEL_NAME, folder)
            _build(model_dir, files)
            _remove_stale(folder, files)
    return files


def _session(path: Path, threads: int) -> Any:
    """An onnxruntime CPU session using ``threads`` threads, fully optimised."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # Idle threads must not spin: the web process shares its cores.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def padded(sequences: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(ids, mask) int64 matrices of ``sequences`` padded with zeros at the end."""
    width = max(len(seq) for seq in sequences)
    ids = np.zeros((len(sequences), width), dtype=np.int64)
    mask = np.zeros((len(sequences), width), dtype=np.int64)
    for row, seq in enumerate(sequences):
        ids[row, : len(seq)] = seq
        mask[row, : len(seq)] = 1
    return ids, mask


class OnnxMiniLM:
    """Sentence embeddings of the bundled model through onnxruntime (no torch).

    ``encode`` embeds one text, ``encode_batch`` many (sorted by length, padded,
    masked). Sessions load lazily per (precision, threads), so a web process that
    only embeds queries never loads the fp32 graph. Thread-safe.
    """

    def __init__(self, model_dir: str | Path, state_dir: Path | None = None) -> None:
        self.model_dir = Path(model_dir)
        self.state_dir = state_dir or default_state_dir()
        self.tokenizer = load_tokenizer(self.model_dir)
        self.dimension = int(read_config(self.model_dir)["hidden"])
        self._files: dict[str, Path] | None = None
        self._sessions: dict[tuple[str, int], Any] = {}
        self._lock = threading.Lock()

    def files(self) -> dict[str, Path]:
        """The graphs built ahead of time, else the cached ones (built on first
        call; a private temp dir if need be)."""
        if self._files is None:
            self._files = prebuilt_graphs(self.model_dir)
        if self._files is None:
            try:
                self._files = ensure_models(self.model_dir, self.state_dir)
            except OSError as exc:
                private = Path(tempfile.mkdtemp(prefix="quiver-onnx-"))
                logger.warning("cannot cache ONNX graphs (%s); using %s", exc, private)
                self._files = ensure_models(self.model_dir, private)
        return self._files

    @functools.cached_property
    def weights_digest(self) -> str:
        """SHA-256 of the model's weights (read once per process)."""
        return weights_hash(self.model_dir)

    def session(self, precision: str, threads: int = 1) -> Any:
        """The onnxruntime session of ``precision`` (``fp32`` or ``int8``)."""
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}")
        key = (precision, threads)
        with self._lock:
            if key not in self._sessions:
                self._sessions[key] = _session(self.files()[precision], threads)
            return self._sessions[key]

    def encode(
        self,
        text: str,
        max_length: int | None = None,
        precision: str = "int8",
        threads: int = 1,
    ) -> np.ndarray:
        """One L2-normalised float32 vector."""
        ids = token_ids(self.tokenizer, text, max_length).astype(np.int64)[None, :]
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        return np.asarray(self.session(precision, threads).run(None, feed)[0][0])

    def encode_batch(
        self,
        texts: list[str],
        batch_size: int = 64,
        max_length: int | None = None,
        precision: str = "fp32",
        threads: int = 1,
    ) -> np.ndarray:
        """One normalised row per text, in input order; batches sorted by length."""
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        session = self.session(precision, threads)
        encoded = [token_ids(self.tokenizer, text, max_length) for text in texts]
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i]))
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            ids, mask = padded([encoded[i] for i in chunk])
            feed = {"input_ids": ids, "attention_mask": mask}
            out[chunk] = session.run(None, feed)[0]
        return out


_SHARED_LOCK = threading.Lock()
_SHARED: dict[str, OnnxMiniLM] = {}
# The same encoders by the path as callers give it: resolving a path is a few
# system calls, and every query embedding asks.
_GIVEN: dict[str, OnnxMiniLM] = {}


def shared_onnx_encoder(model_dir: str | Path) -> OnnxMiniLM:
    """The process-wide ONNX encoder for ``model_dir`` (created once, under a lock)."""
    found = _GIVEN.get(str(model_dir))
    if found is not None:
        return found
    key = str(Path(model_dir).resolve())
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = OnnxMiniLM(key)
        _GIVEN[str(model_dir)] = _SHARED[key]
        return _SHARED[key]
