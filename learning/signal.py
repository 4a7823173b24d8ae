"""A stored learnt model as the engine's learnt signal (read when a snapshot is
built for settings that name it)."""

from __future__ import annotations

import numpy as np

from catalog.models import Catalog
from learning.models import LearnState, LearntModel
from selection.engine.learnt import LearntSignal


def vectors_of(model: LearntModel) -> np.ndarray:
    """The model's example vectors as a (examples x dimension) float32 matrix."""
    raw = np.frombuffer(bytes(model.vectors), dtype=np.float32)
    count = len(model.examples)
    if count == 0 or raw.size == 0:
        return np.zeros((count, 0), dtype=np.float32)
    return raw.reshape(count, raw.size // count)


def signal_for(catalog: Catalog, model_id: int | None) -> LearntSignal | None:
    """The learnt signal of the catalog's model ``model_id`` (its ranking
    weights and its "no tool fits" decision); None when there is none, it
    failed or it has neither. Learnt with another embedding model than the
    catalog's active one, it keeps no vectors (vectors of two models are never
    compared), so neither its vector signals nor its decision act."""
    if model_id is None:
        return None
    model = LearntModel.objects.filter(
        pk=model_id, catalog=catalog, state=LearnState.SUCCEEDED
    ).first()
    if model is None:
        return None
    if not (model.params.get("weights") or model.params.get("no_tool")):
        return None
    tools = tuple(model.params.get("tools", ()))
    at = {name: i for i, name in enumerate(tools)}
    vectors = vectors_of(model)
    if model.embedding_model != catalog.active_embedding_model:
        vectors = np.zeros((len(model.examples), 0), dtype=np.float32)
    return LearntSignal(
        model_id=f"{catalog.slug}:{model.version}",
        embedding_model=model.embedding_model,
        tools=tools,
        examples=vectors,
        example_tools=tuple(
            tuple(at[n] for n in ex["tools"] if n in at) for ex in model.examples
        ),
        texts=tuple(ex["text"] for ex in model.examples),
        weights=dict(model.params.get("weights") or {}),
        k=int(model.params.get("k", 10)),
        no_tool_decision=model.params.get("no_tool") or None,
    )
