"""Runs nobody is running: evaluations and learns whose message the broker lost,
or whose worker died mid-run.

Every worker sends ``learning.tasks.sweep_stalled_runs`` every
``CHECK_EVERY_S`` seconds (learning.tasks.StalledRunTimer). A run still queued
after ``QUIVER_LEARNING_RESEND_S`` is sent again (its claim is a conditional
update, so a second message never runs it twice). A running run whose heartbeat
(set on claim and with each progress update) is older than
``QUIVER_LEARNING_STALE_S`` ends ``failed`` with a reason a curator can read,
so it neither shows "running" for ever nor blocks the next re-learn (which waits
while a learn is queued or running). An evaluation failed here that then reports
back stays failed (its final update needs ``running``).
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from jobs import services as jobs
from learning.models import Evaluation, EvaluationState, LearnState, LearntModel
from learning.services.evaluations import RUN_TASK as RUN_EVALUATION
from learning.services.learn import RUN_LEARN


def stale_reason(seconds: int) -> str:
    return (
        f"stopped: no progress for {seconds} s (the worker running it stopped); "
        "start it again"
    )


def sweep() -> dict[str, int]:
    """Send again the runs left queued; fail the runs whose heartbeat stopped."""
    at = timezone.now()
    resend_before = at - timedelta(seconds=int(settings.QUIVER_LEARNING_RESEND_S))
    stale_s = int(settings.QUIVER_LEARNING_STALE_S)
    stale_before = at - timedelta(seconds=stale_s)
    counts = {"resent": 0, "failed": 0}
    for pk in Evaluation.objects.filter(
        state=EvaluationState.QUEUED, created__lt=resend_before
    ).values_list("pk", flat=True):
        counts["resent"] += int(jobs.send(RUN_EVALUATION, pk))
    for pk in LearntModel.objects.filter(
        state=LearnState.QUEUED, created__lt=resend_before
    ).values_list("pk", flat=True):
        counts["resent"] += int(jobs.send(RUN_LEARN, pk))
    reason = stale_reason(stale_s)
    counts["failed"] += Evaluation.objects.filter(
        state=EvaluationState.RUNNING, heartbeat__lt=stale_before
    ).update(state=EvaluationState.FAILED, error=reason, payload=None, finished=at)
    counts["failed"] += LearntModel.objects.filter(
        state=LearnState.RUNNING, heartbeat__lt=stale_before
    ).update(state=LearnState.FAILED, error=reason, finished=at)
    return counts
