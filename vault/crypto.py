"""People's upstream tokens and Quiver's client secrets, encrypted at rest.

One way to encrypt, the sources' (``sources.secrets.keyring``): Fernet keys
derived from ``QUIVER_SOURCE_KEY`` (else ``SECRET_KEY``), the old keys of
``QUIVER_SOURCE_OLD_KEYS`` still decrypting, each use under a label of its own so
no two uses share a key. ``reencrypt`` (the ``reencrypt_secrets`` command) puts
a stored text under the current key.

A clear token leaves this module only for the request to its own server."""

from __future__ import annotations

from cryptography.fernet import InvalidToken, MultiFernet

from sources.secrets import keyring

TOKENS = b"quiver upstream tokens v1"
CLIENT_SECRETS = b"quiver upstream client secrets v1"


class Unreadable(Exception):
    """A stored secret cannot be decrypted with any configured key."""


def _keys(label: bytes) -> MultiFernet:
    return keyring(label)


def encrypt(text: str, label: bytes = TOKENS) -> str:
    """The stored form of ``text`` ("" for none), under the current key."""
    if not text:
        return ""
    return _keys(label).encrypt(text.encode()).decode()


def decrypt(stored: str, label: bytes = TOKENS) -> str:
    """``stored`` in clear; ``Unreadable`` when no configured key opens it."""
    if not stored:
        return ""
    try:
        return _keys(label).decrypt(stored.encode()).decode()
    except InvalidToken as exc:
        raise Unreadable(
            "token: cannot be decrypted with the configured keys "
            "(QUIVER_SOURCE_KEY changed without QUIVER_SOURCE_OLD_KEYS?)"
        ) from exc


def reencrypt(stored: str, label: bytes = TOKENS) -> str:
    """``stored`` under the current key (the same text when it already is)."""
    if not stored:
        return ""
    try:
        return _keys(label).rotate(stored.encode()).decode()
    except InvalidToken as exc:
        raise Unreadable("token: cannot be decrypted with the configured keys") from exc
