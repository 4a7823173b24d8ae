"""Fixtures of the token vault's tests: a real upstream MCP server protected by
OAuth (tests/oauth_upstream.py, the MCP SDK's server authorization) for the
whole module, a source of it discovered by its first sync, and people who
connect their own accounts through the console's flow, the sign-in at the
upstream scripted (the e2e test does it in a real browser)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client

from catalog.models import Catalog
from catalog.services import ensure_default_catalog
from sources.models import Source
from sources.services import create_source
from tests.factories import make_user
from tests.oauth_upstream import OAuthUpstream, running_oauth_upstream
from tests.sources.conftest import sync
from vault.models import Connection


@pytest.fixture(autouse=True)
def long_job_lease(settings: Any) -> None:
    """A sync claimed in the test's transaction must not beat from a thread."""
    settings.QUIVER_JOB_LEASE_S = 600


@pytest.fixture(scope="module")
def module_oauth_upstream() -> Iterator[OAuthUpstream]:
    with running_oauth_upstream() as server:
        yield server


@pytest.fixture
def oauth_upstream(module_oauth_upstream: OAuthUpstream) -> OAuthUpstream:
    """The module's server, as a test may have changed it put back."""
    authority = module_oauth_upstream.authority
    authority.refuse_all = False
    authority.send_iss, authority.iss_override = True, ""
    authority.access_ttl = 3600
    authority.code_exchanges = authority.refresh_requests = 0
    for tokens in (authority.access, authority.refresh, authority.pairs):
        tokens.clear()  # the previous test's (its database rolled back)
    authority.revoked.clear()
    module_oauth_upstream.callers.clear()
    return module_oauth_upstream


@pytest.fixture
def catalog(db: None) -> Catalog:
    return ensure_default_catalog()


@pytest.fixture
def alice(db: None) -> Any:
    return make_user("alice")


@pytest.fixture
def bob(db: None) -> Any:
    return make_user("bob")


def add_oauth_source(url: str, actor: Any, name: str = "notes") -> Source:
    """A source of an OAuth-protected server, after its first sync (run here)."""
    source = create_source(
        ensure_default_catalog(), name=name, url=url, actor=actor
    ).source
    sync(source)
    source.refresh_from_db()
    return source


@pytest.fixture
def notes(oauth_upstream: OAuthUpstream, admin_user: Any) -> Source:
    return add_oauth_source(oauth_upstream.url, admin_user)


_ADDRESSES = itertools.count(1)


def browser_as(person: Any) -> Client:
    """A browser signed in to the console as ``person`` (its own session, and
    its own address: connection attempts are throttled per address, and the
    tests of a module make more in a minute than one person would)."""
    n, worker = next(_ADDRESSES), os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    address = f"10.{int(worker[2:] or 0) % 256}.{n // 256 % 256}.{n % 256}"
    browser = Client(REMOTE_ADDR=address)
    browser.force_login(person)
    return browser


def start(browser: Client, source: Source) -> str:
    """The person presses Connect: where their browser is sent."""
    response = browser.post(f"/upstream-accounts/sources/{source.pk}/connect/")
    assert response.status_code == 302, response.content
    return str(response["Location"])


def come_back(browser: Client, back: str) -> Any:
    """The browser follows the authorization server's redirect to Quiver."""
    parts = urlsplit(back)
    return browser.get(parts.path, {k: v[0] for k, v in parse_qs(parts.query).items()})


ConnectAs = Callable[..., Any]


@pytest.fixture
def connect(oauth_upstream: OAuthUpstream) -> ConnectAs:
    """``connect(person, source, account)``: the whole console flow, the
    person approving at the upstream as ``account``; the callback's answer."""

    def run(
        person: Any, source: Source, account: str, server: OAuthUpstream | None = None
    ) -> Any:
        browser = browser_as(person)
        back = (server or oauth_upstream).approve(start(browser, source), account)
        return come_back(browser, back)

    return run


def connection_of(person: Any, source: Source) -> Connection | None:
    return Connection.objects.filter(person=person, source=source).first()
