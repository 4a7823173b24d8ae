"""The semantic candidate pool: query embedding (cached) + pgvector HNSW search."""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np
from django.conf import settings
from django.db import connection, transaction

from catalog.models import Catalog
from catalog.services.embeddings import current_backend
from embeddings.backends import (
    LOCAL_MODEL_ID,
    EmbeddingBackend,
    LocalMiniLMBackend,
    get_local_backend,
    local_static_encoder,
)
from embeddings.static import StaticQueryEncoder
from selection.engine.sentences import pooled, sentence_matrix, split_sentences

CACHE_SIZE = 10_000
_lock = threading.Lock()
_query_cache: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()


def normalise_query(text: str) -> str:
    """The cache key's text: the model is uncased and ignores spacing runs."""
    return " ".join(text.lower().split())


def backend_for(model_id: str) -> EmbeddingBackend | None:
    """A backend that embeds queries like the vectors of ``model_id`` were made.

    While a catalog is re-embedded with a new model, selection keeps using the old
    vectors; their queries need the old model: the configured one, or the bundled
    local model, which can always be loaded. Anything else: None (lexical only)."""
    backend = current_backend()
    if model_id == backend.model_id:
        return backend
    if model_id == LOCAL_MODEL_ID:
        return get_local_backend()
    return None


def embed_query(text: str, backend: EmbeddingBackend | None = None) -> np.ndarray:
    """The query's vector; a repeated (normalised) query costs no model call."""
    backend = backend or current_backend()
    key = (backend.model_id, normalise_query(text))
    with _lock:
        vector = _query_cache.get(key)
        if vector is not None:
            _query_cache.move_to_end(key)
            return vector
    vector = backend.embed_query(key[1])
    with _lock:
        _query_cache[key] = vector
        if len(_query_cache) > CACHE_SIZE:
            _query_cache.popitem(last=False)
    return vector


# Above this many tools in one catalog, HNSW search breadth is doubled: at 100k
# vectors ef_search 100 finds 0.92 of the true top 10 and 200 finds 0.96 for ~1 ms
# more (bench/README.md), against ~90 ms for embedding the query.
LARGE_CATALOG = 20_000


def ef_search_for(pool: int, tool_count: int) -> int:
    """``hnsw.ef_search`` for a search of ``pool`` nearest tools in a catalog.

    Never below the pool: pgvector < 0.8 returns at most ef_search rows."""
    breadth = int(settings.QUIVER_EF_SEARCH)
    if tool_count > LARGE_CATALOG:
        breadth *= 2
    return max(breadth, pool)


def query_vector(
    catalog: Catalog, text: str
) -> tuple[np.ndarray, EmbeddingBackend] | None:
    """The query's vector by the catalog's active model, and that model's backend;
    None when there is no text or no backend for the catalog's vectors."""
    backend = backend_for(catalog.active_embedding_model)
    if not text.strip() or backend is None:
        return None
    return embed_query(text, backend), backend


def search(
    catalog: Catalog,
    vector: np.ndarray,
    backend: EmbeddingBackend,
    pool: int,
    tool_count: int = 0,
) -> dict[int, float]:
    """Tool id -> cosine similarity for the ``pool`` nearest tools (pgvector HNSW).

    Only vectors of ``backend``'s model are searched: vectors of two models are
    never compared."""
    literal = "[" + ",".join(f"{x:.7g}" for x in vector.tolist()) + "]"
    dim = int(backend.dimension)
    sql = (
        f"SELECT tool_id, 1 - (embedding::vector({dim}) <=> %s::vector({dim})) "
        "FROM catalog_toolembedding WHERE model_id = %s AND catalog_id = %s "
        f"ORDER BY embedding::vector({dim}) <=> %s::vector({dim}) LIMIT %s"
    )
    with transaction.atomic(), connection.cursor() as cursor:
        ef_search = ef_search_for(pool, tool_count)
        cursor.execute(
            "SELECT set_config('hnsw.ef_search', %s, true)", [str(ef_search)]
        )
        cursor.execute(sql, [literal, backend.model_id, catalog.pk, literal, pool])
        return {int(tool_id): float(score) for tool_id, score in cursor.fetchall()}


def sentence_vectors(
    text: str, backend: EmbeddingBackend, fast: StaticQueryEncoder | None = None
) -> np.ndarray:
    """Each sentence's vector (selection.engine.sentences), one row each; no
    rows for a request of one sentence. See ``embed_sentences``."""
    return embed_sentences(split_sentences(text), backend, fast)


def sentence_encoder(backend: EmbeddingBackend) -> StaticQueryEncoder | None:
    """The static encoder for a request's sentences, when one is built for the
    bundled model that ``backend`` runs (and QUIVER_STATIC_SENTENCES is on)."""
    if not settings.QUIVER_STATIC_SENTENCES:
        return None
    if not isinstance(backend, LocalMiniLMBackend) or backend.engine != "onnx":
        return None
    return local_static_encoder()


def embed_sentences(
    sentences: list[str],
    backend: EmbeddingBackend,
    fast: StaticQueryEncoder | None = None,
) -> np.ndarray:
    """The vectors of ``sentences``, one row each: by the static encoder ``fast``
    (well under a millisecond each), else by the full model through the query
    cache (2-5 ms each)."""
    if fast is not None and sentences:
        return fast.encode_many(sentences)
    vectors = [embed_query(s, backend) for s in sentences]
    return sentence_matrix(vectors, int(backend.dimension))


def search_mixed(
    catalog: Catalog,
    vectors: tuple[np.ndarray, np.ndarray],
    backend: EmbeddingBackend,
    pool: int,
    tool_count: int = 0,
) -> dict[int, float]:
    """Tool id -> sentence-mixed semantic score (selection.engine.sentences) over
    the union of the request's and each sentence's ``pool`` nearest tools (HNSW),
    each scored by its exact cosines to the request and every sentence."""
    query, sentences = vectors
    if len(sentences) == 0:
        return search(catalog, query, backend, pool, tool_count)
    ids: set[int] = set()
    for vector in (query, *sentences):
        ids.update(search(catalog, vector, backend, pool, tool_count))
    found = cosines(catalog, np.vstack([query, sentences]), backend, sorted(ids))
    order = sorted(found)
    if not order:
        return {}
    dense = np.array([found[i] for i in order]).T
    return pooled(dense[0], dense[1:], len(order)).renamed(order.__getitem__)


def cosines(
    catalog: Catalog, vectors: np.ndarray, backend: EmbeddingBackend, ids: list[int]
) -> dict[int, list[float]]:
    """Tool id -> exact cosine to each of ``vectors``, for the tools ``ids``."""
    dim = int(backend.dimension)
    literals = [_literal(v) for v in vectors]
    columns = ", ".join(
        f"1 - (embedding::vector({dim}) <=> %s::vector({dim}))" for _ in literals
    )
    sql = (
        f"SELECT tool_id, {columns} FROM catalog_toolembedding "
        "WHERE model_id = %s AND catalog_id = %s AND tool_id = ANY(%s)"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*literals, backend.model_id, catalog.pk, ids])
        return {int(row[0]): [float(x) for x in row[1:]] for row in cursor.fetchall()}


def _literal(vector: np.ndarray) -> str:
    """A pgvector literal of ``vector``."""
    return "[" + ",".join(f"{x:.7g}" for x in np.asarray(vector).tolist()) + "]"


def semantic_pool(
    catalog: Catalog, text: str, pool: int, tool_count: int = 0
) -> dict[int, float] | None:
    """Tool id -> cosine similarity for the ``pool`` nearest tools, or None when the
    catalog has no complete vector set of a model we can embed queries with."""
    found = query_vector(catalog, text)
    if found is None:
        return None
    return search(catalog, found[0], found[1], pool, tool_count)
