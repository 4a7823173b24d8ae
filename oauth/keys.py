"""The keys Quiver signs its access tokens with, and the JWKS that publishes them.

``QUIVER_OAUTH_SIGNING_KEYS`` (or ``_FILE``, a mounted secret) holds one or more
PEM private keys (EC P-256, ES256): the first signs new tokens, every one of them
verifies and is published, so a rotation puts the new key first and drops the
old one once the longest token it signed has expired. Without it the key is
derived from ``SECRET_KEY`` (HKDF), which every process already shares: no file,
no shared volume, and ``make run`` needs nothing more. Keys are named by their
JWK thumbprint (RFC 7638), the ``kid`` a token carries."""

from __future__ import annotations

import functools
import re

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from joserfc.jwk import ECKey, KeySet

ALGORITHM = "ES256"
PEM_KEY = re.compile(
    r"-----BEGIN (?:EC )?PRIVATE KEY-----.+?-----END (?:EC )?PRIVATE KEY-----", re.S
)
# The order of P-256's group: a private value is in [1, n).
P256_ORDER = int("FFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551", 16)


@functools.cache
def signing_keys() -> tuple[ECKey, ...]:
    """Every key, the signing one first (read once per process)."""
    text = settings.QUIVER_OAUTH.signing_keys
    if not text:
        return (_derived_key(),)
    found = PEM_KEY.findall(text)
    if not found:
        raise ImproperlyConfigured(
            "QUIVER_OAUTH_SIGNING_KEYS: no PEM private key (EC P-256) in it"
        )
    return tuple(_imported(pem, index) for index, pem in enumerate(found, start=1))


def _imported(pem: str, index: int) -> ECKey:
    try:
        key = ECKey.import_key(pem)
    except ValueError as exc:
        raise ImproperlyConfigured(
            f"QUIVER_OAUTH_SIGNING_KEYS: key {index} is not an EC private key"
        ) from exc
    if key.curve_name != "P-256" or not key.is_private:
        raise ImproperlyConfigured(
            f"QUIVER_OAUTH_SIGNING_KEYS: key {index} must be a P-256 private key"
        )
    return _named(key)


def _derived_key() -> ECKey:
    """A P-256 key derived from SECRET_KEY: the same in every process."""
    material = HKDF(
        algorithm=hashes.SHA256(),
        length=48,
        salt=b"quiver",
        info=b"quiver oauth access token signing key v1",
    ).derive(settings.SECRET_KEY.encode())
    value = int.from_bytes(material, "big") % (P256_ORDER - 1) + 1
    private = ec.derive_private_key(value, ec.SECP256R1())
    pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return _named(ECKey.import_key(pem))


def _named(key: ECKey) -> ECKey:
    """The key with its thumbprint as ``kid`` and its use and algorithm set."""
    return ECKey.import_key(
        key.as_dict(private=True),
        {"kid": key.thumbprint(), "alg": ALGORITHM, "use": "sig"},
    )


def current_key() -> ECKey:
    return signing_keys()[0]


def verifying_keys() -> KeySet:
    return KeySet(list(signing_keys()))


def public_jwks() -> dict[str, object]:
    """The JWKS document: every key's public half."""
    return {"keys": [key.as_dict(private=False) for key in signing_keys()]}
