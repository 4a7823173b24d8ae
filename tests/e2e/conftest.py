"""Browser fixtures: one headless Chromium per session, a signed-in page per test.

Playwright's sync API runs an event loop in the test thread, which makes Django
refuse ORM calls there unless told it is safe (it is: the loop is Playwright's own).
"""

from __future__ import annotations

import os

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

from collections.abc import Callable, Iterator  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import pytest  # noqa: E402
from playwright.sync_api import Browser, Page, sync_playwright  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PASSWORD = "pw-12345678"  # what tests.factories.make_user gives every persona


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        yield chromium
        chromium.close()


@contextmanager
def signed_in(browser: Browser, live_server: Any, user: Any) -> Iterator[Page]:
    """A browser tab where ``user`` signed in through the real login form."""
    context = browser.new_context(
        base_url=live_server.url, viewport={"width": 1360, "height": 900}
    )
    context.set_default_timeout(5000)
    # A page load may wait on a cold live server on a loaded machine; a click may not.
    context.set_default_navigation_timeout(30000)
    tab = context.new_page()
    tab.goto("/login/")
    tab.fill("#id_username", user.get_username())
    tab.fill("#id_password", PASSWORD)
    tab.click("button[type=submit]")
    tab.wait_for_url("**/tools/")
    try:
        yield tab
    finally:
        context.close()


@pytest.fixture
def page(browser: Browser, live_server: Any, curator: Any) -> Iterator[Page]:
    """A curator signed in through the real login form."""
    with signed_in(browser, live_server, curator) as tab:
        yield tab


@pytest.fixture
def screenshot() -> Callable[[Page, str], None]:
    """Save a full-page PNG when QUIVER_SCREENSHOTS names a directory."""

    def take(tab: Page, name: str) -> None:
        folder = os.environ.get("QUIVER_SCREENSHOTS")
        if folder:
            Path(folder).mkdir(parents=True, exist_ok=True)
            tab.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)

    return take
