"""The call path under the web server ``make run`` starts (real gunicorn, its
threaded worker, config/gunicorn.py) and a real, slow upstream (issue 30, points
1 and 3):

* the web worker killed in the middle of an approved call: the approval is used,
  the call's ``started`` row is on record, re-sending it is a JSON 409 (never a
  second execution), and the sweep then records it ``interrupted``;
* slow calls in flight hold threads, not the worker: ``/healthz`` and another
  key's ``/select`` answer while they still run."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.utils import timezone

from audit.models import AuditEvent
from calls.attempts import sweep_interrupted
from calls.models import Approval
from catalog.models import Tool
from tests.calls.conftest import link_source
from tests.conftest import wait_until, worker_env
from tests.factories import make_client_key
from tests.outages import start_web, stop_process

EXECUTE = "/api/v1/tool-calls/execute"


@pytest.fixture(scope="module")
def web(django_db_setup: None, django_db_blocker: Any) -> Iterator[Any]:
    process, url = start_web(worker_env(), "calls-killed")
    try:
        yield process, url
    finally:
        stop_process(process)


@pytest.fixture
def linked_slow(transactional_db: None, upstream: Any) -> Any:
    tools = link_source(upstream)
    return tools["slow_echo"]


def workers(master: int) -> list[int]:
    children = Path(f"/proc/{master}/task/{master}/children").read_text()
    return [int(pid) for pid in children.split()]


def client(url: str, key: str) -> httpx.Client:
    return httpx.Client(
        base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60
    )


def in_background(work: Any) -> tuple[threading.Thread, list[Any]]:
    done: list[Any] = []

    def run() -> None:
        try:
            done.append(work())
        except httpx.HTTPError as exc:
            done.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, done


def test_a_worker_killed_mid_call_leaves_the_call_on_record_and_its_approval_spent(
    web, linked_slow, upstream
):
    process, url = web
    Tool.objects.filter(pk=linked_slow.pk).update(requires_approval=True)
    key = make_client_key("agent-killed", "agent", allow_unsafe=True)
    call = {"name": "weather.slow_echo", "arguments": {"text": "x", "seconds": 20}}
    with client(url, key) as agent:
        approval_id = agent.post(EXECUTE, json=call).json()["approval_id"]
        Approval.objects.filter(pk=approval_id).update(
            status="approved", decided=timezone.now()
        )
        approved = {**call, "approval_id": approval_id}
        thread, done = in_background(lambda: agent.post(EXECUTE, json=approved))
        wait_until(lambda: upstream.calls_to("slow_echo"), what="the call upstream")
        before = workers(process.pid)
        for pid in before:
            os.kill(pid, signal.SIGKILL)
        thread.join(30)
        assert isinstance(done[0], httpx.HTTPError)  # no answer: the worker died

        assert Approval.objects.get(pk=approval_id).status == "used"
        start = AuditEvent.objects.filter(event_type="tool_call").latest("pk")
        assert start.output["outcome"] == "started"
        assert start.input["approval_id"] == approval_id
        assert AuditEvent.objects.filter(
            event_type="approval", output__status="used"
        ).exists()
        assert AuditEvent.objects.calls_without_outcome().filter(pk=start.pk).exists()

        wait_until(lambda: set(workers(process.pid)) - set(before), what="a new worker")
        again = agent.post(EXECUTE, json=approved)
    assert again.status_code == 409
    assert again.headers["content-type"] == "application/json"
    assert "already used" in again.json()["detail"]
    assert len(upstream.calls_to("slow_echo")) == 1

    assert sweep_interrupted(timezone.now() + timedelta(minutes=5)) == 1
    ended = AuditEvent.objects.filter(event_type="tool_call").latest("pk")
    assert ended.output["outcome"] == "interrupted"
    assert ended.input["call_id"] == start.pk


def test_slow_calls_hold_threads_not_the_worker(web, linked_slow, upstream):
    _process, url = web
    caller = make_client_key("agent-slow", "agent")
    other = make_client_key("agent-quick", "agent")
    query = {"query": "weather forecast for a city"}
    with client(url, other) as quick:
        assert quick.post("/api/v1/select", json=query).status_code == 200  # warm
        slow = {"name": "weather.slow_echo", "arguments": {"text": "x", "seconds": 10}}
        bearer = {"Authorization": f"Bearer {caller}"}
        running = [
            in_background(
                lambda: httpx.post(url + EXECUTE, json=slow, headers=bearer, timeout=60)
            )
            for _ in range(2)
        ]
        wait_until(
            lambda: len(upstream.calls_to("slow_echo")) == 2, what="both slow calls"
        )
        health = quick.get("/healthz")
        selected = quick.post("/api/v1/select", json=query)
        still_running = [thread.is_alive() for thread, _ in running]
    for thread, _ in running:
        thread.join(30)
    # (503: this test runs no Celery worker, and /healthz says so: an answer.)
    assert health.status_code in (200, 503) and "database" in health.json()["checks"]
    assert selected.status_code == 200
    assert still_running == [True, True]  # answered while both calls waited
    assert all(done[0].json()["outcome"] == "ran" for _, done in running)
