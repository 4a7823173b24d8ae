"""Under the Content-Security-Policy, the console and Swagger UI still work and the
browser reports no violation."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from catalog.services import create_catalog, ensure_default_catalog
from tests.factories import make_tool

pytestmark = pytest.mark.browser


@pytest.fixture
def violations(page: Page) -> Iterator[list[str]]:
    seen: list[str] = []
    page.on(
        "console",
        lambda message: (
            seen.append(message.text)
            if "Content Security Policy" in message.text
            else None
        ),
    )
    yield seen


def test_swagger_ui_renders_the_api_under_the_policy(page, violations):
    page.goto("/api/docs/")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("Quiver API")
    expect(page.locator(".opblock").first).to_be_visible()
    assert violations == []


def test_the_catalog_picker_switches_catalog_without_an_inline_handler(
    page, violations
):
    make_tool(ensure_default_catalog(), name="weather_forecast")
    create_catalog("alpha", "Alpha")
    page.goto("/tools/")
    page.select_option("#nav-catalog", "alpha")
    expect(page).to_have_url(re.compile(r"/tools/\?catalog=alpha"))
    assert violations == []
