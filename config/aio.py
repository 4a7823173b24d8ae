"""Async code from Quiver's synchronous processes, in one place.

Django views, Celery tasks and management commands are synchronous; the MCP SDK is
asyncio. ``run_sync`` runs one coroutine to completion (in a short-lived thread where
a loop already runs, as under Playwright); ``LoopThread`` keeps one event loop per
process (``per_process``: threads do not survive a fork) for work that keeps
connections or a session manager between requests; ``run_here`` runs a coroutine on
the calling thread's own loop, with ``outside_loop`` for Django work in place, for
a request that shares no loop with others (a 2026-07-28 /mcp request).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Coroutine
from contextlib import AbstractAsyncContextManager
from typing import Any, TypeVar

T = TypeVar("T")
START_TIMEOUT_S = 30.0


def loop_running_here() -> bool:
    """Whether an event loop runs on (or is marked running on) this thread."""
    return asyncio.events._get_running_loop() is not None


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to completion from synchronous code."""
    if not loop_running_here():
        return asyncio.run(coroutine)
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = asyncio.run(coroutine)
        except BaseException as exc:  # re-raised in the caller's thread
            outcome["error"] = exc

    thread = threading.Thread(target=target, name="quiver-run-sync")
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]  # type: ignore[no-any-return]


_here = threading.local()


def run_here(coroutine: Coroutine[Any, Any, T], timeout: float) -> T:
    """Run ``coroutine`` to completion on this thread's own event loop (made on
    first use); TimeoutError when it awaits past ``timeout`` seconds (work done
    in place, ``outside_loop``, is bounded by its own timeouts). Not for a
    thread that already runs a loop (``run_sync`` is)."""
    loop: asyncio.AbstractEventLoop | None = getattr(_here, "loop", None)
    if loop is None or loop.is_closed():
        loop = _here.loop = asyncio.new_event_loop()
    return loop.run_until_complete(asyncio.wait_for(coroutine, timeout))


def outside_loop(work: Callable[..., T], *args: Any) -> T:
    """``work(*args)`` from a coroutine ``run_here`` runs, with no loop marked
    running while it works: Django refuses database work where a loop runs (for
    a shared loop, rightly), and this loop has nothing else to run meanwhile."""
    loop = asyncio.events._get_running_loop()
    asyncio.events._set_running_loop(None)
    try:
        return work(*args)
    finally:
        asyncio.events._set_running_loop(loop)


class LoopThread:
    """An event loop running on its own daemon thread for the process's life.

    ``lifespan``, when given, is entered on the loop before the thread counts as
    started and stays open for the loop's life (a session manager's ``run()``);
    if entering it fails, the constructor raises with that failure."""

    def __init__(
        self,
        name: str,
        lifespan: Callable[[], AbstractAsyncContextManager[Any]] | None = None,
    ) -> None:
        self.pid = os.getpid()
        self.loop = asyncio.new_event_loop()
        self._lifespan = lifespan
        self._ready = threading.Event()
        self._failed: BaseException | None = None
        thread = threading.Thread(target=self._run, name=name, daemon=True)
        thread.start()
        self._ready.wait(START_TIMEOUT_S)
        if self._failed is not None or not self._ready.is_set():
            raise RuntimeError(f"the {name} event loop did not start") from self._failed

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            if self._lifespan is None:
                self.loop.call_soon(self._ready.set)
                self.loop.run_forever()
            else:
                self.loop.run_until_complete(self._hold(self._lifespan))
        except BaseException as exc:  # reported to the constructor
            self._failed = exc
            self._ready.set()

    async def _hold(
        self, lifespan: Callable[[], AbstractAsyncContextManager[Any]]
    ) -> None:
        async with lifespan():
            self._ready.set()
            await asyncio.Event().wait()  # for the life of the process

    def submit(self, coroutine: Coroutine[Any, Any, T], timeout: float) -> T:
        """Run ``coroutine`` on the loop; its value, or TimeoutError after
        ``timeout`` seconds (the coroutine is then cancelled)."""
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            raise


_lock = threading.Lock()
_made: dict[str, Any] = {}

L = TypeVar("L", bound=LoopThread)


def per_process(key: str, make: Callable[[], L]) -> L:
    """The process's ``key`` loop thread, made on first use and again after a fork."""
    with _lock:
        found = _made.get(key)
        if found is None or found.pid != os.getpid():
            found = _made[key] = make()
        return found  # type: ignore[no-any-return]
