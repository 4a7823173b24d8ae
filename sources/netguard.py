"""Which addresses a source may reach: everything but cloud metadata endpoints.

Internal MCP servers live on private addresses, so those are allowed; what is denied
is the metadata service of the machine Quiver runs on (instance credentials), plus
``QUIVER_SOURCE_DENY``. An IPv6 address is judged also by every IPv4 address it may
carry (``embedded_ipv4s``). Checked when a source is saved (``url_problem``) and on
every connection (``GuardedBackend``), which connects to the very address it
checked, so DNS rebinding cannot slip through.
The rules: docs/explanation/security.md, Sources (Where a source may connect).
"""

from __future__ import annotations

import ipaddress
import re
import socket
import unicodedata
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
# IPv6 ranges whose addresses carry an IPv4 one in their last 32 bits.
LAST_32_BITS: tuple[ipaddress.IPv6Network, ...] = tuple(
    ipaddress.IPv6Network(net)
    for net in (
        "::ffff:0:0/96",  # IPv4-mapped
        "::ffff:0:0:0/96",  # SIIT, IPv4-translated (RFC 2765)
        "::/96",  # IPv4-compatible (deprecated, still routed by some stacks)
        "64:ff9b::/96",  # NAT64 well-known prefix (RFC 6052)
    )
)
# NAT64 local-use (RFC 8215): an operator's prefix inside it may be /48 to /96,
# so every RFC 6052 position an IPv4 address may take there is read.
NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")
NAT64_POSITIONS = (48, 56, 64, 96)
SIX_TO_FOUR = ipaddress.IPv6Network("2002::/16")
TEREDO = ipaddress.IPv6Network("2001::/32")


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


def rfc6052_ipv4(address: ipaddress.IPv6Address, prefix: int) -> ipaddress.IPv4Address:
    """The IPv4 address behind an RFC 6052 prefix of ``prefix`` bits: its 32 bits
    follow the prefix, skipping bits 64 to 71 (the "u" octet)."""
    octets = address.packed
    if prefix == 96:
        return ipaddress.IPv4Address(octets[12:16])
    around_u = octets[prefix // 8 : 8] + octets[9:]
    return ipaddress.IPv4Address(around_u[:4])


def embedded_ipv4s(address: IPAddress) -> list[ipaddress.IPv4Address]:
    """Every IPv4 address an IPv6 one may stand for: mapped, SIIT and
    IPv4-compatible (the last 32 bits), NAT64 (well-known, and local-use at each
    RFC 6052 prefix length), 6to4 (bits 16 to 47), Teredo (the server, and the
    client: the bitwise NOT of the last 32 bits) and ISATAP (an interface id of
    ``0:5efe`` or ``200:5efe`` before the last 32 bits, under any prefix)."""
    if not isinstance(address, ipaddress.IPv6Address):
        return []
    last = ipaddress.IPv4Address(address.packed[12:16])
    found: list[ipaddress.IPv4Address] = []
    if any(address in net for net in LAST_32_BITS):
        found.append(last)
    if address in NAT64_LOCAL:
        found += [rfc6052_ipv4(address, prefix) for prefix in NAT64_POSITIONS]
    if address in SIX_TO_FOUR:
        found.append(ipaddress.IPv4Address(address.packed[2:6]))
    if address in TEREDO:
        found += address.teredo or ()
    # The u and g bits (0x02, 0x01 of the interface id's first octet) may be set.
    if int.from_bytes(address.packed[8:12], "big") & 0xFCFFFFFF == 0x00005EFE:
        found.append(last)
    return list(dict.fromkeys(found))


def address_denied(address: IPAddress) -> bool:
    _hosts, extra = _extra()
    candidates: list[IPAddress] = [address, *embedded_ipv4s(address)]
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


# RFC 3986: a URL is printable ASCII, and these never appear unencoded in one;
# parsers disagree on some of them (a backslash is a "/" to browsers, not to
# Python's urlsplit), and a control character can split a request line.
NOT_IN_URLS = frozenset(' "<>\\^`{|}')
BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
CHARACTER_RULE = (
    'a URL is printable ASCII without spaces or any of " < > \\ ^ ` { | } '
    "(write a non-ASCII host as xn--..., percent-encode the rest)"
)


def character_problem(url: str) -> str:
    """'' when every character of ``url`` may be in one, else "url: why" naming
    the first that may not (by code point and name: it may be invisible)."""
    for index, char in enumerate(url, start=1):
        if not " " < char < "\x7f" or char in NOT_IN_URLS:
            kind = "control" if unicodedata.category(char) == "Cc" else "unnamed"
            name = unicodedata.name(char, kind)
            return (
                f"url: character {index} (U+{ord(char):04X}, {name}) is not "
                f"allowed: {CHARACTER_RULE}"
            )
    escape = BAD_ESCAPE.search(url)
    if escape is not None:
        return (
            f"url: character {escape.start() + 1} ('%') does not start a "
            "percent-escape (% and two hex digits)"
        )
    return ""


def url_problem(url: str) -> str:
    """'' when ``url`` may be a source, else "url: why" (checked on save)."""
    problem = character_problem(url)
    if problem:
        return problem
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
        self, host: str, port: int, *args: Any, **options: Any
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
                # httpcore's connection options pass through as given.
                return await self.inner.connect_tcp(address, port, *args, **options)
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
