"""A webhook's signing secret and the ``Quiver-Signature`` header.

The header is ``t=<unix seconds>,v1=<hex>``: ``v1`` is HMAC-SHA256, keyed with
the secret's text (UTF-8), over ``"<t>." + body`` (the exact bytes sent). While
a rotated-out secret is still in its grace period, the header carries one ``v1``
per secret (the new one first), so a receiver holding either verifies. Receivers
check that ``t`` is recent (five minutes is usual) to refuse a replayed request.

Secrets are stored encrypted with Fernet under a key of their own label, derived
from ``QUIVER_SOURCE_KEY`` (else ``SECRET_KEY``) as sources' headers are
(``sources.secrets.keyring``); ``QUIVER_SOURCE_OLD_KEYS`` still decrypt.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import datetime
from typing import Any

from cryptography.fernet import InvalidToken

from sources.secrets import keyring

HEADER = "Quiver-Signature"
PREFIX = "whsec_"
_LABEL = b"quiver webhook secrets v1"


class SecretUnreadable(Exception):
    """The stored secret cannot be decrypted with any configured key."""


def new_secret() -> str:
    """A fresh secret: ``whsec_`` and 256 random bits, URL-safe base64."""
    return PREFIX + secrets.token_urlsafe(32)


def encrypt_secret(secret: str) -> str:
    return keyring(_LABEL).encrypt(secret.encode()).decode()


def decrypt_secret(stored: str) -> str:
    try:
        return keyring(_LABEL).decrypt(stored.encode()).decode()
    except InvalidToken as exc:
        raise SecretUnreadable(
            "secret: cannot be decrypted with the configured key (QUIVER_SOURCE_KEY "
            "changed without QUIVER_SOURCE_OLD_KEYS?); rotate the webhook's secret"
        ) from exc


def signing_secrets(webhook: Any, now: datetime) -> list[str]:
    """The secrets that sign now: the current one, then the previous one while
    its grace period lasts."""
    found = [decrypt_secret(webhook.secret_encrypted)]
    until = webhook.previous_secret_until
    if webhook.previous_secret_encrypted and until is not None and until > now:
        found.append(decrypt_secret(webhook.previous_secret_encrypted))
    return found


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """HMAC-SHA256 hex of ``"<timestamp>." + body`` keyed with ``secret``."""
    signed = str(timestamp).encode() + b"." + body
    return hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def signature_header(keys: list[str], timestamp: int, body: bytes) -> str:
    """``t=<timestamp>,v1=<hex>[,v1=<hex>]``: one ``v1`` per secret."""
    parts = [f"t={timestamp}"] + [f"v1={signature(k, timestamp, body)}" for k in keys]
    return ",".join(parts)
