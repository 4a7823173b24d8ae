"""The official MCP Python SDK's OAuth client (``mcp.client.auth``) against a live
Quiver's /mcp, as Claude Code and remote connectors connect: a 401 names the
resource's metadata, the client discovers the authorization server, registers
(RFC 7591), sends the person to the authorization URL with PKCE, and a person
in a real browser (headless Chromium) signs in and approves; the callback reads
the code from the browser's final URL, the client exchanges it, calls tools,
and refreshes its token when it expires. The person then sees the connection in
the console and revokes it, and its token stops."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from playwright.async_api import Page, async_playwright

from audit.models import AuditEvent
from oauth.models import Connection, RefreshToken
from tests.aio import run_async
from tests.conftest import worker_env
from tests.documents import serving_documents
from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, PASSWORD
from tests.factories import make_tool, make_user
from tests.oauth_flow import redirected
from tests.outages import running_web

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server_url(django_db_setup: None, django_db_blocker: Any) -> Iterator[str]:
    with running_web(worker_env(), "oauth-sdk") as url:
        yield url


@pytest.fixture
def url(transactional_db: None, server_url: str) -> str:
    make_tool(name="get_weather", description="Current weather for a city.")
    make_tool(
        name="refund_order",
        description="Refund the order of a customer.",
        allowed_roles=["support"],
    )
    alice = make_user("alice", groups=("support",))
    # gunicorn checks passwords with the default hashers, not the tests' fast one.
    alice.password = PBKDF2PasswordHasher().encode(PASSWORD, "salt-for-tests", 1000)
    alice.save(update_fields=["password"])
    return server_url


class Memory:
    """The SDK's token storage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


async def shoot(page: Page, name: str) -> None:
    folder = os.environ.get("QUIVER_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        await page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)


class Person:
    """Alice at her browser: signs in when asked, approves what she is shown."""

    def __init__(self, page: Page, callback: str) -> None:
        self.page = page
        self.callback_url = callback
        self.approvals = 0

    async def redirect(self, authorization_url: str) -> None:
        page = self.page
        await page.goto(authorization_url)
        if "/login/" in page.url:
            await page.fill("#id_username", "alice")
            await page.fill("#id_password", PASSWORD)
            await page.click("button[type=submit]")
            await page.wait_for_url(lambda at: "/oauth/authorize" in at)
        await page.wait_for_selector("[data-testid=consent]")
        await shoot(page, "oauth-consent")
        await page.click("[data-testid=consent-approve]")
        await page.wait_for_url(lambda at: at.startswith(self.callback_url))
        self.approvals += 1

    async def callback(self) -> AuthorizationCodeResult:
        back = redirected(self.page.url)
        return AuthorizationCodeResult(
            code=back["code"], state=back.get("state"), iss=back.get("iss")
        )


def provider(url: str, person: Person, storage: Memory) -> OAuthClientProvider:
    metadata = OAuthClientMetadata(
        client_name="SDK probe",
        redirect_uris=[person.callback_url],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    return OAuthClientProvider(
        server_url=f"{url}/mcp",
        client_metadata=metadata,
        storage=storage,
        redirect_handler=person.redirect,
        callback_handler=person.callback,
    )


def connected(url: str, mode: str, work: Any, then: Any = None) -> Any:
    """Run ``work(client, oauth, person)`` on an MCP client that authorizes
    through alice's browser; ``then(page)`` afterwards in the same browser."""

    async def main() -> Any:
        # The client's loopback listener (RFC 8252), as Claude Code runs one.
        with serving_documents() as listener:
            return await in_browser(f"{listener.url}/callback")

    async def in_browser(callback: str) -> Any:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
            )
            context = await browser.new_context(viewport={"width": 1360, "height": 900})
            context.set_default_timeout(30000)
            page = await context.new_page()
            person, storage = Person(page, callback), Memory()
            oauth = provider(url, person, storage)
            http = httpx2.AsyncClient(auth=oauth, timeout=60)
            transport = streamable_http_client(f"{url}/mcp", http_client=http)
            async with http, Client(transport, mode=mode) as client:
                result = await work(client, oauth, person)
            if then is not None:
                result = (result, await then(page, storage))
            await browser.close()
            return result

    return run_async(main())


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_the_sdk_connects_with_a_persons_consent_in_a_browser_and_refreshes(url, mode):
    async def work(client, oauth, person):
        names = [tool.name for tool in (await client.list_tools()).tools]
        found = await client.call_tool("search_tools", {"query": "refund an order"})
        first = oauth.context.current_tokens
        oauth.context.token_expiry_time = time.time() - 1  # the token has expired
        again = await client.call_tool("search_tools", {"query": "weather in Oslo"})
        return names, found, again, first, oauth.context.current_tokens, person

    names, found, again, first, second, person = connected(url, mode, work)
    assert names == ["search_tools", "get_tool_details", "call_tool"]
    assert not found.is_error, found.content
    assert "refund_order" in [t["name"] for t in found.structured_content["tools"]]
    assert not again.is_error, again.content
    assert person.approvals == 1
    assert second.refresh_token != first.refresh_token
    assert second.access_token != first.access_token
    [connection] = Connection.objects.select_related("client")
    assert connection.client.name == "SDK probe"
    assert connection.person_name == "alice"
    assert connection.principal.roles == ["support"]
    used = RefreshToken.objects.filter(family__connection=connection)
    assert [token.used is not None for token in used.order_by("id")] == [True, False]
    selections = AuditEvent.objects.filter(event_type="selection").order_by("id")
    assert selections.count() == 2
    tokens_seen = set()
    for row in selections:
        acting = row.input["acting_for"]
        assert acting["person"] == "alice"
        assert acting["oauth_client"]["name"] == "SDK probe"
        tokens_seen.add(acting["token_id"])
    assert len(tokens_seen) == 2  # one row per access token, before and after


def test_a_person_sees_and_revokes_their_connected_app_and_its_token_stops(url):
    async def work(client, oauth, person):
        return await client.call_tool("search_tools", {"query": "weather"})

    async def revoke(page, storage):
        await page.goto(f"{url}/connections/")
        row = page.locator("tr[data-connection='SDK probe']")
        await row.wait_for()
        await shoot(page, "oauth-connected-apps")
        await row.locator("[data-testid=revoke-connection]").click()
        await page.wait_for_selector("text=Revoked SDK probe for alice")
        return storage.tokens

    found, tokens = connected(url, "auto", work, then=revoke)
    assert not found.is_error
    answer = httpx.post(
        f"{url}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={
            "Authorization": f"Bearer {tokens.access_token}",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-06-18",
        },
        timeout=30,
    )
    assert answer.status_code == 401
    assert 'error="invalid_token"' in answer.headers["WWW-Authenticate"]
    refreshed = httpx.post(
        f"{url}/oauth/token",
        data={
            "grant_type": "refresh_token",
            "refresh_token": tokens.refresh_token,
            "client_id": Connection.objects.get().client.client_id,
        },
        timeout=30,
    )
    assert refreshed.status_code == 400
    assert AuditEvent.objects.filter(event_type="oauth_revoked").count() == 1
