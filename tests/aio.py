"""Run a coroutine to completion from a sync test, whatever loop is running.

Playwright's sync API (the e2e tests' session-wide browser) keeps an event loop
running in the main thread for the rest of the session, and ``asyncio.run`` refuses
to start beside it; a thread of its own always has no loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_async(coroutine: Coroutine[Any, Any, T]) -> T:
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = asyncio.run(coroutine)
        except BaseException as exc:  # re-raised in the test's thread
            outcome["error"] = exc

    thread = threading.Thread(target=target, name="test-asyncio")
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]  # type: ignore[no-any-return]
