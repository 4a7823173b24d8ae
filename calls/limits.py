"""How many upstream calls may be in flight at once, so slow upstreams cannot
starve the service.

Per key (429 ``calls_per_key``) and per source (503 ``calls_per_source``) across
every process, and per web process (503 ``calls_per_process``, below gunicorn's
threads so selections and ``/healthz`` keep some). Checked after the call is decided
and before it is claimed, so a refusal spends nothing. The first two are Redis sorted
sets scored by when each slot lapses, so a killed process frees its slots by itself;
when Redis does not answer no call starts, since a limit that cannot be counted does
not hold. The rules: docs/explanation/security.md, Calls.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import redis
from django.conf import settings

from audit.actors import Caller

log = logging.getLogger(__name__)
SLOT_MARGIN_S = 30
# KEYS: the key's set, the source's set. ARGV: lifetime (s), member, key limit,
# source limit. Returns 0 (taken), 1 (the key is full) or 2 (the source is).
TAKE = """
local now = redis.call('TIME')
local t = tonumber(now[1]) + tonumber(now[2]) / 1000000
for i = 1, 2 do redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', t) end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 1 end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then return 2 end
local life = tonumber(ARGV[1])
for i = 1, 2 do
  redis.call('ZADD', KEYS[i], t + life, ARGV[2])
  redis.call('EXPIRE', KEYS[i], math.ceil(life) + 60)
end
return 0
"""
REDIS_DOWN = (
    "redis: unavailable, so the limits on calls in flight cannot be counted; "
    "nothing was called, try again shortly"
)


@dataclass
class LimitReached(Exception):
    """No slot for this call: ``reason`` names the limit, ``status`` is 429 or
    503, ``limit`` the limit's name (or ``redis`` when it could not be read)."""

    reason: str
    status: int
    limit: str

    def __str__(self) -> str:
        return self.reason


class _ProcessGate:
    """Calls in flight in this process (a new count after a fork)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pid = os.getpid()
        self.in_flight = 0

    def enter(self, limit: int) -> bool:
        with self.lock:
            if self.pid != os.getpid():
                self.pid, self.in_flight = os.getpid(), 0
            if self.in_flight >= limit:
                return False
            self.in_flight += 1
            return True

    def leave(self) -> None:
        with self.lock:
            self.in_flight = max(0, self.in_flight - 1)


_gate = _ProcessGate()
_clients: dict[str, tuple[redis.Redis, Any]] = {}
_clients_lock = threading.Lock()


def _redis() -> redis.Redis:
    return _client()[0]


def _client() -> tuple[redis.Redis, Any]:
    """The broker's Redis, and ``TAKE`` registered with it: sent by its SHA
    (EVALSHA), the text only when Redis does not know it (after a restart)."""
    url = settings.CELERY_BROKER_URL
    with _clients_lock:
        if url not in _clients:
            made = redis.Redis.from_url(
                url, socket_timeout=0.5, socket_connect_timeout=0.5
            )
            _clients[url] = (made, made.register_script(TAKE))
        return _clients[url]


class Slots:
    """The slots one call holds; give them back by leaving the ``with``."""

    def __init__(self, keys: tuple[str, str], member: str) -> None:
        self.keys = keys
        self.member = member

    def __enter__(self) -> Slots:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def release(self) -> None:
        _gate.leave()
        try:
            # Each ZREM stands alone: no MULTI/EXEC around them.
            pipe = _redis().pipeline(transaction=False)
            for key in self.keys:
                pipe.zrem(key, self.member)
            pipe.execute()
        except redis.RedisError as exc:  # the slots lapse by themselves
            log.warning("call slots not given back (they lapse): %s", exc)


def caller_key(user: Caller) -> str:
    """The key a caller's calls count against: its API client, else the person."""
    client = getattr(user, "api_client", None)
    return f"client:{client.pk}" if client is not None else f"user:{user.pk}"


def hold(user: Caller, source_id: int, timeout: float) -> Slots:
    """Slots for one call of ``user`` to the source, for at most ``timeout``
    seconds plus a margin; raises ``LimitReached`` naming the limit."""
    if not _gate.enter(settings.QUIVER_CALLS_PER_PROCESS):
        raise LimitReached(_full("calls_per_process"), 503, "calls_per_process")
    keys = (f"quiver:calls:{caller_key(user)}", f"quiver:calls:source:{source_id}")
    member = uuid.uuid4().hex
    try:
        _, take = _client()
        given = (
            timeout + SLOT_MARGIN_S,
            member,
            settings.QUIVER_CALLS_PER_KEY,
            settings.QUIVER_CALLS_PER_SOURCE,
        )
        taken = take(keys=keys, args=given)
    except redis.RedisError as exc:
        _gate.leave()
        log.warning("call refused, Redis unavailable: %s", exc)
        raise LimitReached(REDIS_DOWN, 503, "redis") from exc
    if taken:
        _gate.leave()
        name = "calls_per_key" if int(taken) == 1 else "calls_per_source"
        raise LimitReached(_full(name), 429 if name == "calls_per_key" else 503, name)
    return Slots(keys, member)


def _full(name: str) -> str:
    limit = getattr(settings, f"QUIVER_{name.upper()}")
    whose = {
        "calls_per_key": "of this key",
        "calls_per_source": "to this source",
        "calls_per_process": "in this web process",
    }[name]
    return (
        f"{name}: {limit} upstream calls {whose} are already in flight "
        f"(QUIVER_{name.upper()}); retry when one has ended"
    )
