"""A running worker seals committed audit rows within its interval, unasked."""

from __future__ import annotations

import uuid

import pytest

from audit.models import AuditEvent
from audit.services import record_event, verify_chain
from tests.conftest import wait_until

pytestmark = [pytest.mark.integration]


def test_a_worker_seals_new_events_on_its_own(celery_worker):
    events = [
        record_event(
            "selection",
            actor=None,
            request_id=uuid.uuid4(),
            summary=f"event {n}",
            input={"n": n},
            output={},
        )
        for n in range(3)
    ]
    wait_until(
        lambda: (
            AuditEvent.objects.filter(
                pk__in=[e.pk for e in events], hash__isnull=False
            ).count()
            == 3
        ),
        timeout=30,
        what="the worker's sealer to seal the events",
    )
    check = verify_chain(seal=False)
    assert check.ok, check.problem
    assert check.checked == 3
