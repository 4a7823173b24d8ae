"""config.aio: the one way synchronous Quiver code runs async code."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from config import aio


async def _double(value: int) -> int:
    await asyncio.sleep(0)
    return value * 2


def test_run_sync_returns_the_coroutines_value():
    assert aio.run_sync(_double(21)) == 42


def _inside_a_running_loop(coroutine):
    """Run ``coroutine`` on a loop of its own thread (not ``asyncio.run`` here:
    the browser tests' Playwright may keep a loop running in this thread)."""
    return aio.LoopThread("test-outer").submit(coroutine, 10)


def test_run_sync_works_where_a_loop_already_runs_in_the_thread():
    async def inside() -> int:
        asyncio.get_running_loop()  # a loop runs here: asyncio.run would refuse
        return aio.run_sync(_double(5))

    assert _inside_a_running_loop(inside()) == 10


def test_run_sync_raises_the_coroutines_own_error_in_the_caller():
    async def fails() -> None:
        raise LookupError("from the coroutine")

    async def inside() -> None:
        aio.run_sync(fails())

    with pytest.raises(LookupError, match="from the coroutine"):
        _inside_a_running_loop(inside())


def test_a_loop_thread_runs_submitted_coroutines_on_its_own_thread():
    loop = aio.LoopThread("test-loop")

    async def thread_name() -> str:
        import threading

        return threading.current_thread().name

    assert loop.submit(thread_name(), 5) == "test-loop"
    assert loop.submit(_double(4), 5) == 8


def test_a_submitted_coroutine_past_its_timeout_is_cancelled():
    loop = aio.LoopThread("test-timeout")
    state = {"cancelled": False}

    async def slow() -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            state["cancelled"] = True
            raise

    with pytest.raises(TimeoutError):
        loop.submit(slow(), 0.05)
    loop.submit(asyncio.sleep(0.05), 5)  # let the cancellation land
    assert state["cancelled"] is True


def test_a_lifespan_stays_open_while_the_loop_lives():
    events: list[str] = []

    @asynccontextmanager
    async def lifespan() -> AsyncIterator[None]:
        events.append("entered")
        yield
        events.append("left")  # pragma: no cover - the loop lives on

    loop = aio.LoopThread("test-lifespan", lifespan=lifespan)
    assert loop.submit(_double(1), 5) == 2
    assert events == ["entered"]


def test_a_lifespan_that_fails_to_start_fails_the_constructor_naming_the_loop():
    @asynccontextmanager
    async def broken() -> AsyncIterator[None]:
        raise OSError("manager could not start")
        yield  # pragma: no cover

    with pytest.raises(RuntimeError, match="test-broken") as caught:
        aio.LoopThread("test-broken", lifespan=broken)
    assert isinstance(caught.value.__cause__, OSError)


def test_per_process_makes_one_loop_and_a_new_one_after_a_fork(monkeypatch):
    made: list[aio.LoopThread] = []

    def make() -> aio.LoopThread:
        made.append(aio.LoopThread("test-per-process"))
        return made[-1]

    first = aio.per_process("test-key", make)
    assert aio.per_process("test-key", make) is first
    monkeypatch.setattr(first, "pid", -1)  # as a forked child sees its parent's
    second = aio.per_process("test-key", make)
    assert second is not first
    assert len(made) == 2
