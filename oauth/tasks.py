"""Celery side of OAuth: every worker forgets, once an hour, what no request
can need any more (revoked access tokens past their expiry, long-expired codes)."""

from __future__ import annotations

from celery import shared_task

from config.celery import app
from jobs.periodic import PeriodicSend
from oauth.services.grants import forget_expired

FORGET = "oauth.tasks.forget_expired_grants"


@shared_task
def forget_expired_grants() -> int:
    """Drop expired revocations and codes (idempotent)."""
    return forget_expired()


class ForgetExpiredTimer(PeriodicSend):
    task = FORGET

    def every(self) -> float:
        return 3600.0


app.steps["worker"].add(ForgetExpiredTimer)
