"""Evaluation runs: queued by a curator, run by a worker (learning.tasks), with
progress a person can watch (``done`` of ``total``).

A run claims its row with a conditional update (queued -> running), so two
workers never run one evaluation. Each distinct request runs once: a repeated
one (inline, or among the accepted labels) is folded into the first and counted
(learning.evaluation.distinct_requests), never a reason to refuse the set.
Inline labels (the API's, or a file on the console's page) wait in ``payload``
and are cleared when the run ends; settings tried are kept (``settings_data``) and never
become the catalog's. Running an evaluation changes nothing anyone may see or do,
so it writes no audit event.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from audit.actors import Actor, stored_user
from catalog.models import Catalog
from jobs import services as jobs
from learning.evaluation import (
    LabelledRequest,
    distinct_requests,
    evaluate,
    parse_settings,
)
from learning.models import Evaluation, EvaluationState, Label, LabelStatus
from learning.services.labels import check_items, visible_tool_names
from learning.services.limits import hold_run_slot
from selection.registry import EvaluationInputError
from selection.services.settings import current_settings

RUN_TASK = "learning.tasks.run_evaluation"
PROGRESS_EVERY = 25
NO_LABELS = (
    "labels: the catalog has no accepted labels; upload some (or accept "
    "proposals), or give labels inline"
)


def max_labels() -> int:
    """The accepted labels one run evaluates (the oldest first)."""
    return int(settings.QUIVER_EVALUATION_MAX_LABELS)


def start_evaluation(
    catalog: Catalog,
    *,
    actor: Actor,
    labels: list[Any] | None = None,
    settings_data: dict[str, Any] | None = None,
    enqueue: bool = True,
) -> Evaluation:
    """Queue a run of the catalog's accepted labels (or ``labels`` inline, never
    stored as labels), with its current settings or ``settings_data`` tried;
    ``LimitReached`` past the caller's or the catalog's limit of waiting runs."""
    if settings_data is not None:
        parse_settings(settings_data)
    payload = None
    if labels is not None:
        payload = _inline(catalog, labels, actor)
        total = len(payload)
    else:
        accepted = Label.objects.filter(catalog=catalog, status=LabelStatus.ACCEPTED)
        total = min(accepted.count(), max_labels())
        if not total:
            raise EvaluationInputError({"labels": [NO_LABELS]})
    _, version = current_settings(catalog)
    with transaction.atomic():
        hold_run_slot(catalog, actor)
        run = Evaluation.objects.create(
            catalog=catalog,
            source="inline" if payload is not None else "labels",
            settings_version=version,
            settings_data=settings_data,
            catalog_version=catalog.version,
            payload=payload,
            total=total,
            created_by=stored_user(actor),
        )
        if enqueue:
            jobs.enqueue(RUN_TASK, run.pk)
    return run


def evaluate_pair(
    catalog: Catalog, *, actor: Actor, proposed: dict[str, Any]
) -> dict[str, Any]:
    """The catalog's labels under its saved and under the ``proposed`` settings:
    both runs or neither (the second past the caller's limit of waiting runs,
    ``LimitReached``, takes the first back with it)."""
    with transaction.atomic():
        saved = start_evaluation(catalog, actor=actor)
        tried = start_evaluation(catalog, actor=actor, settings_data=proposed)
    return {"saved": saved, "tried": tried}


def _inline(catalog: Catalog, labels: list[Any], actor: Actor) -> list[dict[str, Any]]:
    """The inline labels, each distinct request once (a repeat is counted, not
    refused); a bad label refuses the whole set, naming it."""
    names = visible_tool_names(catalog, actor)
    checked = check_items(labels, names, catalog.slug, keep_repeats=True)
    if checked.refused:
        errors: dict[str, list[str]] = {}
        for refusal in checked.refused[:20]:
            name = f"labels[{refusal.index}]" + (
                f".{refusal.field}" if refusal.field else ""
            )
            errors.setdefault(name, []).append(refusal.reason)
        raise EvaluationInputError(errors)
    requests = distinct_requests(
        LabelledRequest(c.query, c.messages, c.tools) for c in checked.good
    )
    return [asdict(request) for request in requests]


def _requests(run: Evaluation) -> list[LabelledRequest]:
    if run.payload is not None:
        return distinct_requests(LabelledRequest(**item) for item in run.payload)
    rows = (
        Label.objects.filter(catalog=run.catalog, status=LabelStatus.ACCEPTED)
        .order_by("id")
        .values_list("pk", "query", "messages", "tools")[: max_labels()]
    )
    return distinct_requests(
        LabelledRequest(query, messages, list(tools), label_id=pk)
        for pk, query, messages, tools in rows
    )


def claim_evaluation(run_id: int) -> Evaluation | None:
    """The run, now ours (queued -> running), or None if another took it."""
    changed = Evaluation.objects.filter(pk=run_id, state=EvaluationState.QUEUED).update(
        state=EvaluationState.RUNNING, started=timezone.now(), heartbeat=timezone.now()
    )
    if changed != 1:
        return None
    return Evaluation.objects.select_related("catalog").get(pk=run_id)


def run_evaluation(run: Evaluation) -> Evaluation:
    """Evaluate a claimed run and store its report (or why it failed)."""
    requests = _requests(run)

    def progress(done: int) -> None:
        if done % PROGRESS_EVERY == 0:
            Evaluation.objects.filter(pk=run.pk).update(
                done=done, heartbeat=timezone.now()
            )

    Evaluation.objects.filter(pk=run.pk).update(total=len(requests))
    try:
        report = evaluate(run.catalog, requests, run.settings_data, progress)
    except Exception as exc:
        Evaluation.objects.filter(pk=run.pk, state=EvaluationState.RUNNING).update(
            state=EvaluationState.FAILED,
            error=f"{type(exc).__name__}: {exc}"[:2000],
            payload=None,
            finished=timezone.now(),
        )
        raise
    # Only a run still ours: one the stalled-run sweep failed stays failed.
    Evaluation.objects.filter(pk=run.pk, state=EvaluationState.RUNNING).update(
        state=EvaluationState.SUCCEEDED,
        done=F("total"),
        metrics=report["metrics"],
        rows=report["rows"],
        payload=None,
        finished=timezone.now(),
    )
    run.refresh_from_db()
    return run


def run_now(run: Evaluation) -> Evaluation:
    """Claim and run in this process (the task's work; tests and scripts)."""
    claimed = claim_evaluation(run.pk)
    if claimed is None:
        run.refresh_from_db()
        return run
    return run_evaluation(claimed)
