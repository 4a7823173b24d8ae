"""quiver_client never sends a tool call again when its tool may have run,
whatever failed, and does send again what the server marks retryable (nothing
ran). A live Quiver served as ``make run`` serves it (gunicorn), reaching the test
database through a proxy the test breaks (tests/outages.py), and a real upstream
MCP server that counts every call it receives. The retries' waits go through the
client's ``sleep``, so none is slept for real."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from quiver_client import AsyncQuiver, Quiver, QuiverTimeout, Unavailable

from audit.models import AuditEvent
from catalog.models import Tool
from tests.aio import run_async
from tests.calls.conftest import link_source
from tests.conftest import worker_env
from tests.factories import make_client_key
from tests.outages import TcpProxy, web_behind_proxy
from tests.upstream import Upstream

# Every test transactional: one xdist process runs them all with one gunicorn.
pytestmark = pytest.mark.django_db(transaction=True)
NOTE = "weather.send_note"  # not idempotent: sending it twice sends two notes
ARGUMENTS = {"to": "ann", "text": "the report is late"}


@dataclass
class Live:
    url: str
    key: str
    proxy: TcpProxy
    upstream: Upstream

    def sent(self, tool: str = "send_note") -> int:
        return len(self.upstream.calls_to(tool))


@pytest.fixture(scope="module")
def web(django_db_setup: None, django_db_blocker: Any) -> Iterator[tuple[str, Any]]:
    """One gunicorn for the module; one upstream call in flight per key."""
    env = {**worker_env(), "QUIVER_CALLS_PER_KEY": "1"}
    with web_behind_proxy(env, "client-once") as found:
        yield found


@pytest.fixture
def live(transactional_db: None, web: Any, module_upstream: Upstream) -> Iterator[Live]:
    """The upstream's tools as ``weather.*``; ``send_note`` (no hints) runs
    without approval, as a curator may let it."""
    module_upstream.calls.clear()
    link_source(module_upstream)
    Tool.objects.filter(name=NOTE).update(requires_approval=False)
    key = make_client_key("agent-once", "agent", allow_unsafe=True)
    url, proxy = web
    try:
        yield Live(url, key, proxy, module_upstream)
    finally:
        module_upstream.on_call.clear()


def call(live: Live, sleep: Callable[[float], None], *, aio: bool = False) -> Any:
    """``call(NOTE)`` with the blocking client or its asyncio twin."""
    if not aio:
        with Quiver(live.url, live.key, sleep=sleep) as quiver:
            return quiver.call(NOTE, ARGUMENTS)

    async def waited(seconds: float) -> None:
        sleep(seconds)

    async def main() -> Any:
        async with AsyncQuiver(live.url, live.key, sleep=waited) as quiver:
            return await quiver.call(NOTE, ARGUMENTS)

    return run_async(main())


@pytest.mark.parametrize("aio", [False, True], ids=["blocking", "asyncio"])
def test_a_call_that_ran_but_was_not_recorded_is_never_sent_again(live, aio):
    """The database drops its sessions while the upstream runs the call: the
    outcome cannot be written, so the answer is a 503 that is not retryable."""
    live.upstream.on_call["send_note"] = live.proxy.sever
    sleeps: list[float] = []
    with pytest.raises(Unavailable) as caught:
        call(live, sleeps.append, aio=aio)
    assert live.sent() == 1  # never sent again: the tool ran once
    assert sleeps == []
    error = caught.value
    assert "could not be recorded" in error.detail
    assert error.retryable is False and error.retry_after is None
    [started] = AuditEvent.objects.calls_without_outcome()
    assert f"call_id {started.pk}" in error.detail


def test_a_database_down_before_the_call_is_waited_out_and_the_call_runs_once(live):
    live.proxy.cut()
    sleeps: list[float] = []

    def wait(seconds: float) -> None:
        sleeps.append(seconds)
        if live.proxy.listener is None:
            live.proxy.restore()  # the database is back after the wait

    answer = call(live, wait)
    assert answer["outcome"] == "ran"
    assert sleeps == [5.0]  # the server's Retry-After
    assert live.sent() == 1


def test_a_call_over_the_keys_limit_waits_for_the_one_in_flight_then_runs_once(
    live,
):
    """The key's one call in flight is held at the upstream until the client,
    refused for the key's limit (429, retryable), waits; then both run once."""
    held = threading.Event()
    live.upstream.on_call["slow_echo"] = lambda: held.wait(timeout=30)
    first = threading.Thread(target=_echo, args=(live,))
    first.start()
    _wait_until(lambda: live.sent("slow_echo") == 1)
    sleeps: list[float] = []

    def wait(seconds: float) -> None:
        sleeps.append(seconds)
        held.set()
        first.join(timeout=30)  # the call in flight has ended

    try:
        answer = call(live, wait)
    finally:
        held.set()
        first.join(timeout=30)
    assert answer["outcome"] == "ran"
    assert sleeps == [5.0]
    assert (live.sent(), live.sent("slow_echo")) == (1, 1)


def test_a_call_the_client_stopped_waiting_for_is_not_sent_again(live):
    with (
        Quiver(live.url, live.key, timeout=0.5, sleep=_never) as quiver,
        pytest.raises(QuiverTimeout),
    ):
        quiver.call("weather.slow_echo", {"text": "hi", "seconds": 1.5})
    _wait_until(lambda: live.sent("slow_echo") > 0)
    assert live.sent("slow_echo") == 1


def _echo(live: Live) -> None:
    with Quiver(live.url, live.key, sleep=_never) as quiver:
        quiver.call("weather.slow_echo", {"text": "first"})


def _never(seconds: float) -> None:
    raise AssertionError(f"the client waited {seconds} s to send it again")


def _wait_until(done: Callable[[], bool], timeout: float = 30.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "the call never reached the upstream"
        time.sleep(0.02)
