"""A source's header values are secrets (API keys, bearer tokens): encrypted at rest.

Fernet is authenticated, so a changed column fails to decrypt instead of yielding
other headers; the key is derived (HKDF, a label of its own) from
``QUIVER_SOURCE_KEY``, else ``SECRET_KEY``, so it never lives in the database and is
never another thing's key. Keys in ``QUIVER_SOURCE_OLD_KEYS`` still decrypt. Values
leave this module in clear only for the upstream request (people see ``masked``),
and only for a URL of the origin they were saved for.
The rules and rotation: docs/explanation/security.md, Sources.
"""

from __future__ import annotations

import base64
import functools
import json
import re
from typing import Any
from urllib.parse import quote, quote_plus, urlsplit

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


def _fernet(material: str, label: bytes) -> Fernet:
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=label).derive(
        material.encode()
    )
    return Fernet(base64.urlsafe_b64encode(key))


def keyring(label: bytes) -> MultiFernet:
    """The Fernet keys of ``label`` (each use of these secrets has its own label,
    so no two share a key): the current one from ``QUIVER_SOURCE_KEY`` (else
    ``SECRET_KEY``) first, then the old keys, which still decrypt."""
    current = settings.QUIVER_SOURCE_KEY or settings.SECRET_KEY
    old = tuple(key for key in settings.QUIVER_SOURCE_OLD_KEYS if key)
    return _key_ring(current, old, label)


@functools.lru_cache(maxsize=16)
def _key_ring(current: str, old: tuple[str, ...], label: bytes) -> MultiFernet:
    """The keys derived once per key material and label (HKDF on every call cost
    more than the decryption), a new ring as soon as the settings name other keys."""
    return MultiFernet([_fernet(current, label), *(_fernet(k, label) for k in old)])


def _keys() -> MultiFernet:
    return keyring(_LABEL)


@functools.lru_cache(maxsize=256)
def _plain_text(stored: str, keys: MultiFernet) -> bytes:
    """A column's clear text, decrypted once per (text, keys) in this process:
    a call decrypts its source's headers, and the text only changes when they
    are saved again (then it is another text, decrypted anew). A text that
    does not decrypt raises every time (nothing is kept of it)."""
    return keys.decrypt(stored.encode())


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
        plain = _plain_text(stored, _keys())
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


def reencrypt_headers(stored: str) -> str:
    """A column's text under the current key (``HeadersUnreadable`` when no
    configured key opens it): what ``reencrypt_secrets`` writes back."""
    if not stored:
        return ""
    try:
        return _keys().rotate(stored.encode()).decode()
    except InvalidToken as exc:
        raise HeadersUnreadable("headers: cannot be decrypted") from exc


def masked(source: Any) -> dict[str, str]:
    """The header names with every value masked; names of unreadable headers are
    not known, so an unreadable column shows as no headers."""
    try:
        headers = decrypt_headers(source)
    except HeadersUnreadable:
        return {}
    return {name: MASK for name in sorted(headers)}


def scrub(text: str, headers: dict[str, str]) -> str:
    """``text`` with every header value in it replaced by the mask, in every
    spelling an upstream or a library may echo it back in (``Scrubber``)."""
    return Scrubber(headers)(text)


# Shorter derived spellings (a password, a base64 fragment) would mask ordinary
# words and data; the values themselves are masked at any length.
MIN_DERIVED = 8


class Scrubber:
    """Masks a source's secrets (its header values, or a stdio command's env
    values) in text, built once per call and used on every string it keeps or
    forwards. For each value it masks:

    * the value as it is, and its token after an auth scheme (``Bearer <t>``),
      and each of its words of ``MIN_DERIVED`` characters or more;
    * for ``Basic <b64>``, the decoded ``user:pass`` and the password alone;
    * each of those as JSON string content (escapes), URL-encoded (``quote``,
      ``quote_plus``, with upper- or lower-case hex) and base64 (standard and
      URL-safe alphabets, padded or not), including inside a longer base64 text
      (a header dump encoded whole): there its characters depend on where it
      starts, so each of the three alignments' certain characters are masked.
    """

    @classmethod
    def of(cls, headers: dict[str, str]) -> Scrubber:
        """The scrubber of these values, made once per process for each set of
        values (a call builds one for its source's headers; they rarely change)."""
        return _scrubber(tuple(sorted(headers.items())))

    def __init__(self, headers: dict[str, str]) -> None:
        forms: set[str] = set()
        for value in headers.values():
            if not value:
                continue
            forms.add(value)
            for secret in _secrets_in(value):
                forms.update(_spellings(secret))
        forms.discard("")
        self.forms = sorted(forms, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for form in self.forms:
            if form in text:
                text = text.replace(form, MASK)
        return text

    def value(self, value: Any) -> Any:
        """A JSON value with every string in it (keys too) scrubbed."""
        if isinstance(value, str):
            return self(value)
        if isinstance(value, list):
            return [self.value(item) for item in value]
        if isinstance(value, dict):
            return {self(str(key)): self.value(item) for key, item in value.items()}
        return value


@functools.lru_cache(maxsize=256)
def _scrubber(items: tuple[tuple[str, str], ...]) -> Scrubber:
    return Scrubber(dict(items))


def _secrets_in(value: str) -> set[str]:
    """The value, its token after a scheme, its long words, and what a Basic
    credential decodes to."""
    found = {value}
    found.update(word for word in value.split() if len(word) >= MIN_DERIVED)
    scheme, _, token = value.strip().partition(" ")
    token = token.strip()
    if token:
        found.add(token)
    if scheme.lower() == "basic" and token:
        try:
            pair = base64.b64decode(token + "=" * (-len(token) % 4)).decode()
        except ValueError:
            pair = ""
        if ":" in pair:
            found.add(pair)
            password = pair.split(":", 1)[1]
            if len(password) >= MIN_DERIVED:
                found.add(password)
    return {secret for secret in found if secret}


def _spellings(secret: str) -> set[str]:
    spelled = {
        secret,
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
    }
    # JSON may escape "/" too (PHP's json_encode does by default).
    spelled.update({form.replace("/", "\\/") for form in spelled})
    for quoted in (quote(secret, safe=""), quote(secret), quote_plus(secret)):
        spelled.update({quoted, _lower_hex(quoted)})
    if len(secret) >= MIN_DERIVED:
        spelled.update(_base64_forms(secret.encode()))
    return spelled


def _lower_hex(quoted: str) -> str:
    return re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), quoted)


# Characters of a base64 text fully decided by the secret, when it starts 0, 1
# or 2 bytes into a 3-byte group: skip the ones its first byte shares.
_SKIP_AT_START = (0, 2, 3)
_KEEP_AT_END = (0, 1, 2)  # of a last partial group: its characters the secret decides


def _base64_forms(data: bytes) -> set[str]:
    forms: set[str] = set()
    whole = base64.b64encode(data).decode()
    forms.update({whole, whole.rstrip("=")})
    for shift in range(3):
        size = shift + len(data)
        encoded = base64.b64encode(b"\0" * shift + data).decode()
        end = (size // 3) * 4 + _KEEP_AT_END[size % 3]
        core = encoded[_SKIP_AT_START[shift] : end]
        if len(core) >= MIN_DERIVED:
            forms.add(core)
    forms.update({form.replace("+", "-").replace("/", "_") for form in forms})
    return forms
