"""The audit keyring: the current key signs, every key it ever had still verifies.

The current key comes from ``QUIVER_AUDIT_KEY``, else ``QUIVER_AUDIT_KEY_FILE``
(re-read when it changes, so a rotation reaches running sealers without a restart),
else ``SECRET_KEY``; retired keys are the lines of ``QUIVER_AUDIT_OLD_KEYS_FILE``.
Each key is named by its public ``key_id``, and a row or a checkpoint line is checked
with the key its ``key_id`` names. The settings: docs/reference/settings.md.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from django.conf import settings


@dataclass(frozen=True)
class Keyring:
    current: bytes
    current_id: str
    keys: dict[str, bytes]  # every known key by key_id, the current one included

    def key_for(self, key_id: str) -> bytes | None:
        return self.keys.get(key_id)


def fingerprint(key: bytes) -> str:
    """A short public name of a key (the ``key_id`` rows and checkpoints carry)."""
    return hmac.digest(key, b"quiver-audit-key-id", "sha256").hex()[:16]


def derived_key(secret: str) -> bytes:
    return hmac.digest(secret.encode(), b"quiver-audit-chain", "sha256")


def _stamp(path: str) -> tuple[str, int, int, int]:
    """What tells a file changed: its inode, size and modification time."""
    try:
        info = os.stat(path)
    except OSError:
        return (path, 0, 0, 0)
    return (path, info.st_ino, info.st_size, info.st_mtime_ns)


def read_key_file(path: str | Path) -> str:
    return Path(path).read_text(encoding="utf-8").strip()


def read_old_keys(path: str | Path) -> list[str]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    lines = (line.strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


@lru_cache(maxsize=8)
def _build(
    literal: str,
    key_file: tuple[str, int, int, int],
    old_file: tuple[str, int, int, int],
    secret: str,
) -> Keyring:
    if literal:
        current = literal.encode()
    elif key_file[0]:
        current = read_key_file(key_file[0]).encode()
    else:
        current = derived_key(secret)
    olds = [old.encode() for old in read_old_keys(old_file[0])]
    keys = {fingerprint(old): old for old in olds}
    current_id = fingerprint(current)
    keys[current_id] = current
    return Keyring(current, current_id, keys)


_SIGNING_WITH: ContextVar[bytes | None] = ContextVar("audit_signing_with", default=None)


@contextmanager
def signing_with(key: bytes) -> Iterator[None]:
    """Within this block (this thread), ``key`` is the current key and the one the
    settings name stays in the keyring as a retired one: a rotation to a key that
    is not in the settings yet."""
    token = _SIGNING_WITH.set(key)
    try:
        yield
    finally:
        _SIGNING_WITH.reset(token)


def keyring() -> Keyring:
    """The keyring as the settings and the key files say now."""
    key_file = settings.QUIVER_AUDIT_KEY_FILE
    ring = _build(
        settings.QUIVER_AUDIT_KEY,
        _stamp(key_file) if key_file else ("", 0, 0, 0),
        _stamp(str(settings.QUIVER_AUDIT_OLD_KEYS_FILE)),
        settings.SECRET_KEY,
    )
    given = _SIGNING_WITH.get()
    if given is None or given == ring.current:
        return ring
    given_id = fingerprint(given)
    return Keyring(given, given_id, {**ring.keys, given_id: given})
