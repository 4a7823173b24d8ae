"""HTTP plumbing every app shares (no app imports another app's views for it)."""

from __future__ import annotations

import ipaddress
import uuid
from typing import Any

from django.conf import settings


def request_id(request: Any) -> uuid.UUID | None:
    """The request's id (config.middleware.RequestIdMiddleware); DRF requests too."""
    value = getattr(request, "request_id", None)
    return value if isinstance(value, uuid.UUID) else None


def request_started(request: Any) -> float | None:
    """The perf_counter stamp set when the request reached Django (or None)."""
    value = getattr(request, "started", None)
    if value is None:
        value = getattr(getattr(request, "_request", None), "started", None)
    return value if isinstance(value, float) else None


def client_address(request: Any) -> str:
    """The address a request came from, as a network to count limits against.

    ``REMOTE_ADDR`` unless that peer is one of ``QUIVER_TRUSTED_PROXIES``: then the
    ``X-Forwarded-For`` hops are read from the right (each proxy appends the peer it
    saw), skipping trusted proxies, and the first other hop is the client; a hop
    that is not an address stops the walk at the last trusted one. IPv6 clients
    are counted per /64 (one host holds a whole /64), IPv4 per address."""
    meta = getattr(request, "META", {})
    address = _address(meta.get("REMOTE_ADDR", ""))
    if address is None:
        return str(meta.get("REMOTE_ADDR", ""))
    trusted = settings.QUIVER_TRUSTED_PROXIES
    hops = str(meta.get("HTTP_X_FORWARDED_FOR", "")).split(",")
    while _is_trusted(address, trusted) and hops:
        hop = _address(hops.pop().strip())
        if hop is None:
            break
        address = hop
    prefix = 64 if address.version == 6 else 32
    return str(ipaddress.ip_network(f"{address}/{prefix}", strict=False))


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    mapped = getattr(address, "ipv4_mapped", None)
    return mapped or address


def _is_trusted(address: Any, trusted: Any) -> bool:
    return any(address in network for network in trusted)
