"""How much learning work may wait: one caller cannot queue unbounded work.

An evaluation or a learn costs a worker minutes of CPU, so a caller and a catalog
may each have only so many queued or running; past either a new one is refused
(``LimitReached``, 429) and nothing is queued. ``hold_run_slot`` makes the count and
the new row one decision (an advisory lock on the caller, then the catalog's row
lock, always in that order). The rules: docs/explanation/learning.md, How much
learning work may wait.
"""

from __future__ import annotations

from django.conf import settings
from django.db import connection
from django.db.models import Q

from audit.actors import Actor, stored_user
from catalog.models import Catalog
from config.exceptions import LimitReached
from learning.models import Evaluation, EvaluationState, LearnState, LearntModel

# The first key of the two-key advisory lock on a caller (its second: the user's
# id); Postgres keeps two-key locks apart from the one-key locks audit uses.
CALLER_LOCK = 23_012
WAITING = (EvaluationState.QUEUED, EvaluationState.RUNNING)
LEARNING = (LearnState.QUEUED, LearnState.RUNNING)
RETRY_AFTER_S = 30


def per_caller() -> int:
    return int(settings.QUIVER_LEARNING_RUNS_PER_CALLER)


def per_catalog() -> int:
    return int(settings.QUIVER_LEARNING_RUNS_PER_CATALOG)


def waiting_runs(where: Q) -> int:
    """Evaluations and learns matching ``where`` that are queued or running."""
    evaluations = Evaluation.objects.filter(where, state__in=WAITING).count()
    learns = LearntModel.objects.filter(where, state__in=LEARNING).count()
    return evaluations + learns


def hold_run_slot(catalog: Catalog, actor: Actor) -> None:
    """Refuse (``LimitReached``) unless one more run fits the caller's and the
    catalog's limits; call it inside the transaction that creates the run."""
    if actor is None:
        return  # the system (a re-learn it queues itself): see the module
    user: Actor = stored_user(actor)
    if user is None:
        raise LimitReached("runs", "runs: only a signed-in caller queues work")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [CALLER_LOCK, user.pk])
    Catalog.objects.select_for_update().filter(pk=catalog.pk).first()
    mine = waiting_runs(Q(created_by=user))
    if mine >= per_caller():
        raise LimitReached(
            "runs",
            f"runs: {mine} evaluations and learns of yours are queued or running, "
            f"the most one caller may have (QUIVER_LEARNING_RUNS_PER_CALLER="
            f"{per_caller()}); wait for one to finish",
            retry_after=RETRY_AFTER_S,
        )
    theirs = waiting_runs(Q(catalog=catalog))
    if theirs >= per_catalog():
        raise LimitReached(
            "runs",
            f"runs: {theirs} evaluations and learns of catalog {catalog.slug!r} are "
            f"queued or running, the most one catalog may have "
            f"(QUIVER_LEARNING_RUNS_PER_CATALOG={per_catalog()}); wait for one to "
            "finish",
            retry_after=RETRY_AFTER_S,
        )
