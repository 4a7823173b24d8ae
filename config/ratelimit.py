"""Per-client rate limits for every request that writes an audit row, in Redis.

One budget a minute per API client or person: each audit row a request asks for
costs 1, reads cost nothing, and over the budget the caller gets a 429 naming the
limit, with ``Retry-After``. Fixed one-minute windows in the broker's Redis, so every
web process shares them; when Redis does not answer each process counts on its own,
so selection keeps working. The rules: docs/explanation/security.md, Nothing is
trusted from the wrong caller; the setting: docs/reference/settings.md.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from functools import wraps
from typing import TYPE_CHECKING, Any

import redis
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from rest_framework.exceptions import Throttled
from rest_framework.permissions import SAFE_METHODS
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from config.http import client_address

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

log = logging.getLogger(__name__)
WINDOW_S = 60
clock = time.time  # wall time: the windows are the same minutes in every process
RETRY_REDIS_AFTER_S = 5.0
UNKNOWN_KEY_DELAY_S = 0.2
UNKNOWN_KEYS_PER_MINUTE = 30


class Counter:
    """Adds a cost to a key's count for the current window; returns the new count."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._local: dict[tuple[str, int], tuple[int, float]] = {}
        self._clients: dict[str, redis.Redis] = {}
        self._redis_down_until = 0.0

    def add(self, key: str, window: int, cost: int, ttl: int = WINDOW_S * 2) -> int:
        if time.monotonic() >= self._redis_down_until:
            try:
                return self._add_in_redis(key, window, cost, ttl)
            except redis.RedisError as exc:
                self._redis_down_until = time.monotonic() + RETRY_REDIS_AFTER_S
                log.warning("rate limits counted per process: Redis failed (%s)", exc)
        return self._add_here(key, window, cost, ttl)

    def _add_in_redis(self, key: str, window: int, cost: int, ttl: int) -> int:
        # No MULTI/EXEC: each command is atomic on its own, and another client's
        # command between the two changes neither the count nor the expiry.
        pipe = self._redis().pipeline(transaction=False)
        name = f"quiver:rate:{key}:{window}"
        pipe.incrby(name, cost)
        pipe.expire(name, ttl)
        count, _ = pipe.execute()
        return int(count)

    def _add_here(self, key: str, window: int, cost: int, ttl: int) -> int:
        now = time.monotonic()
        with self._lock:
            for stale in [k for k, (_, end) in self._local.items() if end < now]:
                del self._local[stale]
            count, end = self._local.get((key, window), (0, now + ttl))
            self._local[(key, window)] = (count + cost, end)
            return count + cost

    def _redis(self) -> redis.Redis:
        url = settings.CELERY_BROKER_URL
        if url not in self._clients:
            self._clients[url] = redis.Redis.from_url(
                url, socket_timeout=0.25, socket_connect_timeout=0.25
            )
        return self._clients[url]


COUNTER = Counter()


def limit_for(user: User | AnonymousUser) -> int:
    """Requests a minute this caller may make; 0 means unlimited."""
    client = getattr(user, "api_client", None)
    own = getattr(client, "rate_limit_per_minute", None)
    return int(own) if own is not None else int(settings.QUIVER_RATE_LIMIT_PER_MINUTE)


def charge(
    key: str,
    limit: int,
    cost: int,
    what: str = "audited requests (selections, validations, changes) a minute "
    "for this client",
) -> None:
    """Count cost against key's budget; raise Throttled (429) once past limit."""
    if limit <= 0:
        return
    now = clock()
    window = int(now // WINDOW_S)
    count = COUNTER.add(key, window, cost)
    if count <= limit:
        return
    COUNTER.add(key, window, -cost)  # a refused request spends nothing
    wait = max(1, math.ceil((window + 1) * WINDOW_S - now))
    raise Throttled(
        wait=wait,
        detail=(
            f"rate: over the limit of {limit} {what} "
            f"({count} counted this minute); retry in {wait} s"
        ),
    )


def penalize_unknown_key(request: HttpRequest | Request) -> None:
    """A request with an unknown bearer key waits a little (guessing keys gets
    slow) and, past UNKNOWN_KEYS_PER_MINUTE from one address, gets 429 at once."""
    address = client_address(request)
    charge(
        f"unknown-key:{address}",
        UNKNOWN_KEYS_PER_MINUTE,
        1,
        what="unknown API keys a minute from one address",
    )
    time.sleep(UNKNOWN_KEY_DELAY_S)


def _caller_key(user: User | AnonymousUser) -> str:
    client = getattr(user, "api_client", None)
    return f"client:{client.pk}" if client is not None else f"user:{user.pk}"


def charge_caller(user: User | AnonymousUser | None, cost: int) -> None:
    """Count ``cost`` against this signed-in caller's budget (429 past it)."""
    if cost <= 0 or not user or not user.is_authenticated:
        return
    charge(_caller_key(user), limit_for(user), cost)


def first_this_minute(user: User | AnonymousUser, what: str) -> bool:
    """Whether this is the caller's first ``what`` this minute (for what is
    recorded once a window past the budget, whatever the caller sends)."""
    window = int(clock() // WINDOW_S)
    return COUNTER.add(f"{what}:{_caller_key(user)}", window, 1) == 1


class ClientRateThrottle(BaseThrottle):
    """DRF throttle for the endpoints that write an audit row on every call;
    runs after authentication and the permission check."""

    def allow_request(self, request: Request, view: Any) -> bool:
        charge_caller(request.user, self.cost(request))
        return True

    def cost(self, request: Request) -> int:
        return 1


class WriteRateThrottle(ClientRateThrottle):
    """Viewsets whose writes are audited (tools, catalogs, keys, settings): a
    write costs 1, a read nothing."""

    def cost(self, request: Request) -> int:
        return 0 if request.method in SAFE_METHODS else 1


class BatchRateThrottle(ClientRateThrottle):
    """/select/batch: each item is a selection (an audit row)."""

    def cost(self, request: Request) -> int:
        items = request.data.get("requests") if isinstance(request.data, dict) else None
        return max(1, len(items)) if isinstance(items, list) else 1


def rate_limited(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """A console view whose POST writes an audit row: the POST costs 1 of the
    person's budget; past it the 429 page, naming the limit, and nothing done."""
    return rate_limited_by(1)(view)


def rate_limited_by(
    cost: int,
) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """``rate_limited`` for a POST that writes ``cost`` audit rows."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if request.method not in SAFE_METHODS:
                try:
                    charge_caller(request.user, cost)
                except Throttled as exc:
                    response = render(
                        request, "429.html", {"detail": exc.detail}, status=429
                    )
                    wait = getattr(exc, "wait", None) or 1
                    response["Retry-After"] = str(int(wait))
                    return response
            return view(request, *args, **kwargs)

        return wrapped

    return decorate
