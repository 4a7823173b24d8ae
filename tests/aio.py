"""Run a coroutine to completion from a sync test, whatever loop is running.

Playwright's sync API (the e2e tests' session-wide browser) keeps an event loop
running in the main thread for the rest of the session; ``config.aio.run_sync``
then runs the coroutine in a thread of its own."""

from __future__ import annotations

from config.aio import run_sync as run_async

__all__ = ["run_async"]
