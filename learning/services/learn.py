"""Learning a catalog's ranking from its accepted labels: the learn job.

``request_learn`` queues a learn (a ``LearntModel`` row is the job); the worker
runs ``run_learn``: it ranks the labels with the engine as it stands, fits the
learnt signal and no-tool threshold on folds of the labels (learning.fit), and
stores the model with its cross-validated report and the settings it proposes.
``apply_model`` makes the proposal the catalog's settings through the one
settings path (selection.services.settings: versioned, gated, audited).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import replace
from typing import Any

import numpy as np
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from audit.actors import Actor, stored_user
from catalog.models import Catalog
from jobs import services as jobs
from learning import crossval
from learning.fit import FitResult, fit
from learning.models import LearnState, LearntModel
from learning.services.limits import hold_run_slot
from learning.tuning import Tuner, tunable
from selection.adapters.snapshots import get_snapshot
from selection.services.settings import current_settings, update_selection_settings

log = logging.getLogger(__name__)
RUN_LEARN = "learning.learn_tasks.run_learn"
# The engine ranks at most this many labels for the weight search (a fixed
# sample); every label is still an example of the learnt signal.
FIT_SAMPLE = 1000
# The fit's matrices are (sampled labels x tools), so the sample also keeps to
# this many cells: 1,000 labels x 4,076 tools peaked at ~0.86 GB (tracemalloc,
# session 12), and a 100,000-tool catalog samples 50 labels, not 1,000.
FIT_CELLS = 5_000_000


def request_learn(
    catalog: Catalog,
    *,
    actor: Actor,
    apply: bool,
    accept_regression: str = "",
) -> LearntModel:
    """Queue a learn of ``catalog`` (applied when it finishes if ``apply``);
    ``LimitReached`` past the caller's or the catalog's limit of waiting runs."""
    with transaction.atomic():
        hold_run_slot(catalog, actor)
        Catalog.objects.select_for_update().filter(pk=catalog.pk).first()
        top = LearntModel.objects.filter(catalog=catalog).aggregate(v=Max("version"))
        model = LearntModel(
            catalog=catalog,
            version=int(top["v"] or 0) + 1,
            apply=apply,
            accept_regression=accept_regression,
            created_by=stored_user(actor),
        )
        model.full_clean()
        model.save()
        jobs.enqueue(RUN_LEARN, model.pk)
    return model


def claim(model_id: int) -> LearntModel | None:
    """The queued model, now running; None when another worker has it or it is
    gone (exactly one claim succeeds)."""
    changed = LearntModel.objects.filter(pk=model_id, state=LearnState.QUEUED).update(
        state=LearnState.RUNNING, heartbeat=timezone.now()
    )
    if changed != 1:
        return None
    return LearntModel.objects.select_related("catalog").get(pk=model_id)


def run_learn(model: LearntModel, *, actor: Actor = None) -> LearntModel:
    """Fit, store and (if asked and it helps) apply; a failure is recorded."""
    try:
        _learn(model)
    except Exception as exc:  # the job must end in a state a curator can read
        log.exception("learn %s failed", model.pk)
        model.state, model.error = LearnState.FAILED, str(exc)[:2000]
        model.finished = timezone.now()
        model.save(update_fields=["state", "error", "finished"])
        return model
    if model.apply and model.proposed_settings is not None:
        try:
            apply_model(
                model,
                actor=actor or model.created_by,
                accept_regression=model.accept_regression,
            )
        except ValidationError as exc:
            model.error = "; ".join(exc.messages)[:2000]
            model.save(update_fields=["error"])
    return model


def _learn(model: LearntModel) -> None:
    catalog = model.catalog
    labels = crossval.accepted_labels(catalog)
    prepared = crossval.prepare(catalog, labels)
    _progress(model, 30)
    snapshot, names = get_snapshot(catalog)
    sample = fit_sample(len(prepared.labels), len(prepared.tools))
    requests = [prepared.requests[i] for i in sample]
    tuner = None
    if tunable(snapshot.settings):  # the engine's settings are fitted too
        parts = crossval.label_parts(catalog, snapshot, names, requests)
        tuner = Tuner(replace(snapshot, learnt=None), parts)
        base = tuner.matrix(snapshot.settings)
    else:
        base = crossval.base_scores(catalog, snapshot, names, requests)
    _progress(model, 70)
    result = fit(
        prepared.tools,
        prepared.labels,
        base,
        sample,
        tuner=tuner,
        settings=snapshot.settings,
    )
    model.embedding_model = catalog.active_embedding_model
    model.params = {**result.params(), "tools": list(prepared.tools)}
    model.examples = [
        {"text": lab.text, "tools": [prepared.tools[r] for r in lab.tools]}
        for lab in prepared.labels
    ]
    model.vectors = _vector_bytes(prepared.labels)
    model.cv = result.cv
    model.proposed_settings = _proposal(catalog, model, result)
    model.state, model.progress, model.finished = (
        LearnState.SUCCEEDED,
        100,
        timezone.now(),
    )
    model.save()


def fit_sample(count: int, tools: int) -> np.ndarray:
    """The labels (positions, sorted) the engine ranks for the fit: all of them
    up to ``FIT_SAMPLE`` and ``FIT_CELLS`` cells, else a fixed random sample."""
    size = min(FIT_SAMPLE, max(1, FIT_CELLS // max(tools, 1)))
    if count <= size:
        return np.arange(count)
    pick = np.random.default_rng(11).permutation(count)[:size]
    return np.sort(pick)


def _vector_bytes(labels: list[Any]) -> bytes:
    dims = {len(lab.vector) for lab in labels}
    if len(dims) != 1 or dims == {1}:
        return b""
    return np.stack([lab.vector for lab in labels]).astype(np.float32).tobytes()


def _proposal(
    catalog: Catalog, model: LearntModel, result: FitResult
) -> dict[str, Any] | None:
    """The settings this learn proposes (None: propose no change)."""
    data, _ = current_settings(catalog)
    changed = False
    if result.settings:  # engine settings fitted to the labels (learning.tuning)
        data.update(result.settings)
        changed = True
    if result.improves or result.no_tool:  # the model carries the decision
        data["learnt_model"] = model.pk
        changed = True
    if result.no_tool_threshold is not None:
        data["no_tool_threshold"] = result.no_tool_threshold
        changed = True
    return data if changed else None


def _progress(model: LearntModel, percent: int) -> None:
    model.progress, model.heartbeat = percent, timezone.now()
    model.save(update_fields=["progress", "heartbeat"])


def apply_model(
    model: LearntModel,
    *,
    actor: Actor,
    accept_regression: str = "",
    request_id: uuid.UUID | None = None,
) -> int:
    """Make the model's proposed settings the catalog's (audited, gated)."""
    if model.state != LearnState.SUCCEEDED or model.proposed_settings is None:
        raise ValidationError(
            {"apply": ["apply: this learn proposes no change to apply"]}
        )
    _, version = update_selection_settings(
        model.catalog,
        model.proposed_settings,
        actor=actor,
        request_id=request_id,
        accept_regression=accept_regression or None,
        note={"learnt_model": model.pk, "cv": model.cv},
    )
    model.applied_settings_version = version
    model.save(update_fields=["applied_settings_version"])
    return version


def relearn_on_change(catalog: Catalog) -> LearntModel | None:
    """Queue a re-learn (applied) when ``QUIVER_RELEARN_ON_CHANGE`` is on and the
    catalog has an applied learnt model, unless one is already waiting (the
    queue is the debounce)."""
    if not getattr(settings, "QUIVER_RELEARN_ON_CHANGE", False):
        return None
    engine_settings, _ = current_settings(catalog)
    if engine_settings.get("learnt_model") is None:
        return None
    waiting = LearntModel.objects.filter(
        catalog=catalog, state__in=(LearnState.QUEUED, LearnState.RUNNING)
    )
    if waiting.exists():
        return None
    return request_learn(catalog, actor=None, apply=True)


__all__ = ["apply_model", "claim", "relearn_on_change", "request_learn", "run_learn"]
