"""HTTP to the OAuth servers a source names: its resource metadata, its
authorization server's metadata, registration, tokens and revocation.

Every exchange goes through the sources' guard (``sources.connect``'s guarded
transport: each address checked on connect, no proxy from the environment), no
redirect is followed, and each answer is read to ``ANSWER_CAP`` at most. An URL
the metadata names must be https (http only on a loopback address, for a server
on the same machine) and pass the sources' URL rules."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import httpx2
from django.conf import settings

from sources.capped import _Capped
from sources.connect import guarded_transport
from sources.netguard import character_problem

ANSWER_CAP = 256 * 1024
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


class CappedAnswers(httpx2.AsyncBaseTransport):
    """``inner`` with every answer's body read to ``cap`` bytes at most."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, cap: int) -> None:
        self.inner = inner
        self.cap = cap

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        encoding = response.headers.get("content-encoding", "identity").lower()
        stream = response.stream
        assert isinstance(stream, httpx2.AsyncByteStream)
        response.stream = _Capped(stream, self.cap, encoding, "answer")
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


def client_options(timeout: float | None = None) -> dict[str, Any]:
    """The options of every HTTP client that talks to an OAuth server (httpx's,
    or authlib's on it)."""
    wait = float(timeout or settings.QUIVER_VAULT_TIMEOUT_SECONDS)
    return {
        "transport": CappedAnswers(guarded_transport(), ANSWER_CAP),
        "trust_env": False,
        "follow_redirects": False,
        "timeout": httpx2.Timeout(wait),
        "headers": {"Accept-Encoding": "identity", "Accept": "application/json"},
    }


def guarded_client(timeout: float | None = None) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(**client_options(timeout))


def endpoint_problem(name: str, url: Any) -> str:
    """'' when ``url`` may be an OAuth endpoint, else "name: why"."""
    if not isinstance(url, str) or not url:
        return f"{name}: missing"
    problem = character_problem(url)
    if problem:
        return problem.replace("url:", f"{name}:", 1)
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError:
        return f"{name}: not a valid URL"
    if parts.username is not None or parts.password is not None:
        return f"{name}: must not hold a user or password"
    if parts.fragment:
        return f"{name}: must not hold a fragment"
    if parts.scheme == "https" and parts.hostname:
        return ""
    if parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS:
        return ""
    return f"{name}: must be an https URL (http only on 127.0.0.1 or localhost)"
