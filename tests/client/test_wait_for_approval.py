"""quiver_client's wait_for_approval against a live Quiver: an agent's call
waits, a person decides it a moment later, and the wait returns the decision
(approved: the re-sent call runs; denied: the reason); past its timeout it
raises ApprovalTimeout; the asyncio client does the same. How it treats a 429
is checked with a stand-in server (a live one cannot be made to answer 429 on
cue)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from django.db import connection
from quiver_client import (
    ApprovalTimeout,
    AsyncQuiver,
    NotFound,
    PendingApproval,
    Quiver,
)

from calls.decisions import approve, deny
from calls.models import Approval
from tests.aio import run_async
from tests.calls.approval_rows import restore_approver_groups
from tests.calls.conftest import link_source
from tests.factories import make_client_key, make_user
from tests.upstream import Upstream, running_upstream

pytestmark = pytest.mark.django_db(transaction=True)
CALL = ("weather.delete_file", {"path": "/srv/old.log"})


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    with running_upstream() as upstream:
        yield upstream


@pytest.fixture
def quiver_url(live_server: Any, upstream: Upstream) -> str:
    link_source(upstream)
    restore_approver_groups()
    return str(live_server.url)


def later(seconds: float, decide: Callable[[], Any]) -> threading.Thread:
    """A person deciding in another thread (and connection) after a while."""

    def run() -> None:
        try:
            time.sleep(seconds)
            decide()
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def pending_call(quiver: Quiver) -> PendingApproval:
    with pytest.raises(PendingApproval) as caught:
        quiver.call(*CALL)
    return caught.value


def test_the_wait_returns_the_approval_and_the_call_then_runs(quiver_url, upstream):
    ann = make_user("ann", groups=("approver",))
    with Quiver(quiver_url, make_client_key("waiting-agent", "agent")) as quiver:
        pending = pending_call(quiver)
        row = Approval.objects.get(pk=pending.approval_id)
        person = later(1.0, lambda: approve(row, person=ann, reason="fine"))
        decision = quiver.wait_for_approval(pending, timeout=60, interval=0.2)
        person.join()
        assert decision["status"] == "approved"
        assert (decision["id"], decision["decider"]) == (pending.approval_id, "ann")
        assert decision["reason"] == "fine" and decision["tool_name"] == CALL[0]
        result = quiver.call(*CALL, approval_id=pending.approval_id)
    assert result["outcome"] == "ran"
    assert [call.name for call in upstream.calls] == ["delete_file"]


def test_a_denial_is_returned_with_its_reason(quiver_url, upstream):
    ann = make_user("ann", groups=("approver",))
    with Quiver(quiver_url, make_client_key("denied-agent", "agent")) as quiver:
        pending = pending_call(quiver)
        row = Approval.objects.get(pk=pending.approval_id)
        person = later(0.5, lambda: deny(row, person=ann, reason="not on Fridays"))
        decision = quiver.wait_for_approval(pending.approval_id, interval=0.2)
        person.join()
    assert (decision["status"], decision["reason"]) == ("denied", "not on Fridays")
    assert upstream.calls == []


def test_the_wait_gives_up_at_its_timeout(quiver_url):
    with Quiver(quiver_url, make_client_key("patient-agent", "agent")) as quiver:
        pending = pending_call(quiver)
        with pytest.raises(ApprovalTimeout) as caught:
            quiver.wait_for_approval(pending, timeout=1.0, interval=0.2)
    assert caught.value.approval_id == pending.approval_id
    assert caught.value.status == "pending"
    assert isinstance(caught.value, TimeoutError)
    assert Approval.objects.get(pk=pending.approval_id).status == "pending"


def test_another_key_s_approval_is_not_found_at_once(quiver_url):
    with Quiver(quiver_url, make_client_key("asker", "agent")) as quiver:
        pending = pending_call(quiver)
    with (
        Quiver(quiver_url, make_client_key("snooper", "agent")) as other,
        pytest.raises(NotFound),
    ):
        other.wait_for_approval(pending.approval_id, timeout=60)


def test_the_async_client_waits_too(quiver_url):
    ann = make_user("ann", groups=("approver",))
    key = make_client_key("async-agent", "agent")
    with Quiver(quiver_url, key) as quiver:
        pending = pending_call(quiver)
    row = Approval.objects.get(pk=pending.approval_id)

    async def wait() -> Any:
        async with AsyncQuiver(quiver_url, key) as quiver:
            timed_out = None
            try:
                await quiver.wait_for_approval(row.pk, timeout=0.3, interval=0.1)
            except ApprovalTimeout as exc:
                timed_out = exc
            person = later(0.3, lambda: approve(row, person=ann))
            decision = await quiver.wait_for_approval(str(row.pk), interval=0.1)
            person.join()
            return timed_out, decision

    timed_out, decision = run_async(wait())
    assert timed_out is not None and decision["status"] == "approved"


def test_a_429_waits_its_retry_after_and_the_wait_goes_on():
    answers = iter(
        [
            httpx.Response(
                429, headers={"Retry-After": "7"}, json={"error": "throttled"}
            ),
            httpx.Response(503, json={"error": "unavailable", "detail": "database"}),
            httpx.Response(200, json={"id": "a-1", "status": "pending"}),
            httpx.Response(200, json={"id": "a-1", "status": "expired", "reason": ""}),
        ]
    )
    paths: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        paths.append(request.url.path)
        return next(answers)

    slept: list[float] = []
    with Quiver(
        "http://quiver.test",
        "k",
        transport=httpx.MockTransport(handle),
        sleep=slept.append,
    ) as quiver:
        decision = quiver.wait_for_approval("a-1", interval=1.0, max_interval=2.0)
    assert decision["status"] == "expired"
    assert paths == ["/api/v1/approvals/a-1"] * 4
    assert slept[0] >= 7  # the server's Retry-After
    assert 0.9 <= slept[1] <= 1.7 and slept[2] <= 2.2  # growing, capped at 2 s


def test_a_retry_after_past_the_deadline_ends_the_wait_at_once():
    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(429, headers={"Retry-After": "3600"}, json={})

    slept: list[float] = []
    with (
        Quiver(
            "http://quiver.test",
            "k",
            transport=httpx.MockTransport(handle),
            sleep=slept.append,
        ) as quiver,
        pytest.raises(ApprovalTimeout),
    ):
        quiver.wait_for_approval("a-1", timeout=60)
    assert slept == []
