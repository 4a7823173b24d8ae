"""A source's header values are secrets (API keys, bearer tokens): encrypted at rest.

Fernet (AES-128-CBC with HMAC-SHA256, from ``cryptography``) is authenticated: a
changed or truncated column fails to decrypt instead of yielding other headers. The
key is derived (HKDF-SHA256, a label of its own) from ``QUIVER_SOURCE_KEY``, else
from ``SECRET_KEY``, so it never lives in the database and is never the key of
anything else (sessions, the audit chain). Keys in ``QUIVER_SOURCE_OLD_KEYS`` still
decrypt; the next save of a source encrypts with the current key.

Rotation limits: changing the key material without listing the old one in
``QUIVER_SOURCE_OLD_KEYS`` makes every stored header unreadable (the source's sync
then fails naming this, and an admin enters the headers again); nothing re-encrypts
stored rows by itself.

Values never leave this module in clear except to the upstream request: what people
and programs are shown is ``masked`` (names, never values).

The values are bound to the origin (scheme, host, port) of the URL they were saved
for: the encrypted text holds that origin, and ``decrypt_headers`` refuses to give
them for a source whose URL has another origin, whatever changed the URL (the
services drop them on such a change; a write around the services finds them
refused). Text saved before the binding (no origin in it) is read as before."""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import urlsplit

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

MASK = "••••••"
_LABEL = b"quiver source headers v1"
_BOUND = 2  # the version of the plain text that names its origin
DEFAULT_PORTS = {"http": 80, "https": 443}


class HeadersUnreadable(Exception):
    """The stored headers cannot be decrypted with any configured key."""


class HeadersForAnotherOrigin(HeadersUnreadable):
    """The stored headers were saved for another origin than the source's URL."""


def origin(url: str) -> str:
    """``scheme://host:port`` of ``url`` (lower case, the scheme's default port
    filled in), or "" when it has none: two URLs of one origin may share
    secrets, as a browser shares credentials."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return ""
    scheme, host = parts.scheme.lower(), parts.hostname
    if not scheme or not host:
        return ""
    host = f"[{host}]" if ":" in host else host
    return f"{scheme}://{host}:{port or DEFAULT_PORTS.get(scheme, '')}"


def _fernet(material: str) -> Fernet:
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_LABEL).derive(
        material.encode()
    )
    return Fernet(base64.urlsafe_b64encode(key))


def _keys() -> MultiFernet:
    current = settings.QUIVER_SOURCE_KEY or settings.SECRET_KEY
    old = [key for key in settings.QUIVER_SOURCE_OLD_KEYS if key]
    return MultiFernet([_fernet(current), *(_fernet(key) for key in old)])


def encrypt_headers(headers: dict[str, str], url: str | None = None) -> str:
    """The column's text for these headers ("" for none), bound to the origin of
    ``url`` (every service passes the source's URL; None, unbound, is for text
    made by hand, as tests do)."""
    if not headers:
        return ""
    data: dict[str, Any] = dict(headers)
    if url is not None:
        data = {"v": _BOUND, "origin": origin(url), "headers": headers}
    plain = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return _keys().encrypt(plain.encode()).decode()


def decrypt_headers(source: Any) -> dict[str, str]:
    """The source's headers in clear, for the request to its upstream only;
    never for a URL of another origin than the one they were saved for."""
    stored = getattr(source, "headers_encrypted", "") or ""
    if not stored:
        return {}
    try:
        plain = _keys().decrypt(stored.encode())
    except InvalidToken as exc:
        raise HeadersUnreadable(
            "headers: cannot be decrypted with the configured key "
            "(QUIVER_SOURCE_KEY changed without QUIVER_SOURCE_OLD_KEYS?); "
            "enter the headers again"
        ) from exc
    data = json.loads(plain)
    # A header's value is a string: an int "v" can only be the bound form's.
    if data.get("v") == _BOUND and isinstance(data.get("headers"), dict):
        if data.get("origin") != origin(getattr(source, "url", "") or ""):
            raise HeadersForAnotherOrigin(
                "headers: saved for another origin than the source's url, so "
                "not sent; enter the headers again"
            )
        data = data["headers"]
    return {str(name): str(value) for name, value in data.items()}


def masked(source: Any) -> dict[str, str]:
    """The header names with every value masked; names of unreadable headers are
    not known, so an unreadable column shows as no headers."""
    try:
        headers = decrypt_headers(source)
    except HeadersUnreadable:
        return {}
    return {name: MASK for name in sorted(headers)}


def scrub(text: str, headers: dict[str, str]) -> str:
    """``text`` with every header value in it replaced by the mask, for errors
    (an upstream or a library may echo a request's headers back). A value's
    words of 8 characters or more ("Bearer <token>": the token) are masked too."""
    secrets = set()
    for value in headers.values():
        secrets.add(value)
        secrets.update(word for word in value.split() if len(word) >= 8)
    for secret in sorted(secrets, key=len, reverse=True):
        if secret:
            text = text.replace(secret, MASK)
    return text
