"""Fetching the JSON documents OAuth names: a client's metadata document, the
company authorization server's metadata, keys and introspection.

Every connection goes through the sources' connection rule
(``sources.netguard.checked_addresses``: resolved once, every address checked,
the connection made to a checked address, so DNS rebinding cannot slip past it).
A client ID metadata document is a URL anyone may name, so it is held to more:
https on the default port only, public addresses only (no private, loopback or
reserved network), unless ``QUIVER_OAUTH_LOOPBACK_CLIENT_DOCUMENTS`` lets http on
127.0.0.1 through for development and tests. No redirect is followed, no proxy
from the environment is used, and an answer is read up to ``MAX_BYTES``."""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx
from django.conf import settings

from sources.netguard import DeniedAddress, checked_addresses

MAX_BYTES = 64 * 1024
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


class FetchError(Exception):
    """A document that could not be fetched or read, said for the caller."""


class _GuardedBackend(httpcore.NetworkBackend):
    """Connects only to addresses the rule allows (public only, or any but
    cloud metadata)."""

    def __init__(self, *, public_only: bool) -> None:
        self.inner = httpcore.SyncBackend()
        self.public_only = public_only

    def connect_tcp(
        self, host: str, port: int, *args: Any, **options: Any
    ) -> httpcore.NetworkStream:
        try:
            addresses = checked_addresses(host, port)
        except (DeniedAddress, OSError) as exc:
            raise httpcore.ConnectError(f"{host}: {exc}") from exc
        if self.public_only:
            for address in addresses:
                if not _public(address, host):
                    raise httpcore.ConnectError(f"{host}: not a public address")
        # httpcore's connection options pass through as given.
        return self.inner.connect_tcp(addresses[0], port, *args, **options)

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("documents are fetched over TCP only")


def _public(address: str, host: str) -> bool:
    ip = ipaddress.ip_address(address.split("%")[0])
    if ip.is_loopback and host in LOOPBACK:
        return bool(settings.QUIVER_OAUTH.loopback_client_documents)
    return ip.is_global


def _client(public_only: bool) -> httpx.Client:
    transport = httpx.HTTPTransport(trust_env=False)
    transport._pool._network_backend = _GuardedBackend(public_only=public_only)
    timeout = float(settings.QUIVER_OAUTH.http_timeout_s)
    return httpx.Client(
        transport=transport, timeout=timeout, follow_redirects=False, trust_env=False
    )


def get_json(url: str, *, public_only: bool) -> tuple[dict[str, Any], dict[str, str]]:
    """The JSON object at ``url`` and the answer's headers, or ``FetchError``."""
    return _read(url, "GET", public_only=public_only)


def post_form(url: str, data: dict[str, str], auth: tuple[str, str]) -> dict[str, Any]:
    """POST a form with HTTP Basic credentials; the JSON object answered."""
    body, _headers = _read(url, "POST", public_only=False, data=data, auth=auth)
    return body


def _read(
    url: str, method: str, *, public_only: bool, **send: Any
) -> tuple[dict[str, Any], dict[str, str]]:
    try:
        with (
            _client(public_only) as client,
            client.stream(
                method, url, headers={"Accept": "application/json"}, **send
            ) as answer,
        ):
            if answer.status_code != 200:
                raise FetchError(f"{url} answered HTTP {answer.status_code}")
            body = b""
            for chunk in answer.iter_bytes():
                body += chunk
                if len(body) > MAX_BYTES:
                    raise FetchError(f"{url}: the document is over {MAX_BYTES} bytes")
            headers = dict(answer.headers)
    except httpx.HTTPError as exc:
        raise FetchError(f"{url}: {exc}") from exc
    try:
        document = json.loads(body)
    except ValueError as exc:
        raise FetchError(f"{url}: not JSON") from exc
    if not isinstance(document, dict):
        raise FetchError(f"{url}: not a JSON object")
    return document, headers
