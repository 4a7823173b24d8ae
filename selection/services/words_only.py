"""When a selection is ranked by words alone, and why, in a sentence.

The hybrid, ensemble and embedding scorers weigh a request's meaning against the
tools' vectors. Until a catalog's tools are embedded (a new catalog, the demo
catalog just after ``make run`` starts), or when its vectors are of a model this
server cannot embed a request with, there is nothing to weigh: the engine ranks by
BM25F alone. The answer says so (``words_only`` and this module's reason), as do
Try it, the tool list and ``/healthz``, so no one reads such a ranking as the
catalog's best."""

from __future__ import annotations

from catalog.choices import EmbeddingStatus
from catalog.models import Catalog, Tool
from selection.adapters.pgvector import backend_for

# The scorers that weigh meaning (``llm`` asks a model, whatever its shortlist).
WEIGH_MEANING = frozenset({"embedding", "hybrid", "ensemble"})


def words_only_reason(catalog: Catalog, scorer: str) -> str:
    """Why a ``scorer`` answer in ``catalog`` had no semantic scores, or "" when
    it is not for want of vectors (the scorer weighs no meaning, or the request
    had no text to embed)."""
    if scorer not in WEIGH_MEANING:
        return ""
    model = catalog.active_embedding_model
    if not model:
        waiting = Tool.objects.filter(
            catalog=catalog, embedding_status=EmbeddingStatus.PENDING
        ).count()
        return (
            f"The catalog's tool embeddings are not ready ({waiting} of "
            f"{Tool.objects.filter(catalog=catalog).count()} tools wait for their "
            "vectors): ranked by words alone (BM25F), not by meaning. Ask again "
            "once they are; /healthz lists the embeddings pending per catalog."
        )
    if backend_for(model) is None:
        return (
            f"The catalog's vectors were made by {model}, which this server cannot "
            "embed a request with: ranked by words alone (BM25F), not by meaning. "
            f"Re-embed the catalog (reindex --catalog {catalog.slug})."
        )
    return ""
