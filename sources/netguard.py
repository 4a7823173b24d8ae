"""Which addresses a source may reach: everything but cloud metadata endpoints.

Internal MCP servers live on private addresses, so those are allowed (README,
"Security"). What is denied is the metadata service of the machine Quiver runs on
(instance credentials): 169.254.169.254 and the whole link-local range, AWS's IPv6
fd00:ec2::254, Alibaba's 100.100.100.200, Google's metadata.google.internal, plus
whatever ``QUIVER_SOURCE_DENY`` adds (hosts or networks). An IPv6 address that
carries an IPv4 one (mapped ``::ffff:a.b.c.d``, NAT64 ``64:ff9b::/96``, 6to4) is
judged by the IPv4 address inside it.

The rule is checked twice: when a source is saved (``url_problem``) and on every
connection (``GuardedBackend``): the host is resolved once, every address checked,
and the connection made to a checked address, so a name that resolves elsewhere
between the check and the connect (DNS rebinding) cannot slip through.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpcore2
from django.conf import settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

DENIED_HOSTS = frozenset({"metadata.google.internal", "metadata.goog"})
DENIED_NETWORKS: tuple[Network, ...] = tuple(
    ipaddress.ip_network(net)
    for net in (
        "169.254.0.0/16",  # link-local: AWS, GCP, Azure, OpenStack metadata
        "100.100.100.200/32",  # Alibaba Cloud metadata
        "fd00:ec2::254/128",  # AWS metadata over IPv6
        "fe80::/10",  # IPv6 link-local
    )
)
NAT64 = ipaddress.ip_network("64:ff9b::/96")


class DeniedAddress(Exception):
    """The source's host is (or resolves to) a denied address."""


def _extra() -> tuple[set[str], list[Network]]:
    hosts: set[str] = set()
    networks: list[Network] = []
    for entry in settings.QUIVER_SOURCE_DENY:
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            hosts.add(entry.lower().rstrip("."))
    return hosts, networks


def embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one stands for (mapped, NAT64, 6to4), if any."""
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address.sixtofour


def address_denied(address: IPAddress) -> bool:
    _hosts, extra = _extra()
    candidates: list[IPAddress] = [address]
    inner = embedded_ipv4(address)
    if inner is not None:
        candidates.append(inner)
    return any(
        candidate.version == net.version and candidate in net
        for candidate in candidates
        for net in (*DENIED_NETWORKS, *extra)
    )


def host_denied(host: str) -> bool:
    extra_hosts, _networks = _extra()
    name = host.lower().rstrip(".").strip("[]")
    if name in DENIED_HOSTS or name in extra_hosts:
        return True
    try:
        return address_denied(ipaddress.ip_address(name))
    except ValueError:
        return False


def resolve(host: str, port: int) -> list[str]:
    """The addresses ``host`` resolves to (the seam tests replace)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def checked_addresses(host: str, port: int) -> list[str]:
    """Resolve ``host`` and refuse it if it or any of its addresses is denied."""
    if host_denied(host):
        raise DeniedAddress(f"url: {host} is a denied address (cloud metadata)")
    addresses = resolve(host, port)
    for address in addresses:
        if address_denied(ipaddress.ip_address(address.split("%")[0])):
            raise DeniedAddress(
                f"url: {host} resolves to {address}, a denied address (cloud metadata)"
            )
    return addresses


def url_problem(url: str) -> str:
    """'' when ``url`` may be a source, else "url: why" (checked on save)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        return f"url: not a valid URL ({exc})"
    if parts.scheme not in ("http", "https"):
        return "url: must start with http:// or https://"
    if not parts.hostname:
        return "url: must name a host"
    if parts.username is not None or parts.password is not None:
        return "url: must not hold a user or password (use headers)"
    try:
        checked_addresses(parts.hostname, port or 443)
    except DeniedAddress as exc:
        return str(exc)
    except OSError:
        return ""  # not resolvable now; every connection checks again
    return ""


class GuardedBackend(httpcore2.AsyncNetworkBackend):
    """The default network backend, connecting only to checked addresses."""

    def __init__(self, inner: httpcore2.AsyncNetworkBackend | None = None) -> None:
        self.inner = inner or httpcore2.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        try:
            addresses = await anyio.to_thread.run_sync(checked_addresses, host, port)
        except DeniedAddress as exc:
            raise httpcore2.ConnectError(str(exc)) from exc
        except OSError as exc:
            raise httpcore2.ConnectError(f"url: cannot resolve {host} ({exc})") from exc
        last: Exception | None = None
        for address in addresses:
            try:
                return await self.inner.connect_tcp(
                    address,
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore2.ConnectError, httpcore2.ConnectTimeout) as exc:
                last = exc
        raise last or httpcore2.ConnectError(f"url: {host} has no address")

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        raise httpcore2.ConnectError("url: sources connect over TCP only")

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)
