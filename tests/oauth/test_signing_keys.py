"""The keys access tokens are signed with: derived from SECRET_KEY by default
(every process the same key, no file), or read from a setting or a secret file
(the first signs, every one verifies and is published), so a rotation keeps old
tokens working until they expire."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from django.core.exceptions import ImproperlyConfigured
from joserfc.jwk import ECKey, KeySet

from oauth import keys
from oauth.tokens import TokenRefused, read_own
from tests.oauth.conftest import ORIGIN, RESOURCE
from tests.oauth_flow import connect, forge


def pem() -> str:
    private = ec.generate_private_key(ec.SECP256R1())
    return private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


@pytest.fixture
def configured(settings) -> Iterator[Callable[[str], None]]:
    def use(text: str) -> None:
        settings.QUIVER_OAUTH = dataclasses.replace(
            settings.QUIVER_OAUTH, signing_keys=text
        )
        keys.signing_keys.cache_clear()

    yield use
    keys.signing_keys.cache_clear()


def test_the_default_key_is_derived_from_the_secret_key_the_same_each_time(settings):
    first = keys._derived_key()
    assert keys._derived_key().thumbprint() == first.thumbprint()
    settings.SECRET_KEY = "another"
    assert keys._derived_key().thumbprint() != first.thumbprint()


def test_after_a_rotation_old_tokens_verify_until_the_old_key_is_dropped(
    configured, alice
):
    old, new = pem(), pem()
    configured(old)
    connection = connect(alice, roles=("support",))
    token = forge(connection, ORIGIN)
    configured(new + old)
    assert keys.current_key().thumbprint() == ECKey.import_key(new).thumbprint()
    assert len(keys.public_jwks()["keys"]) == 2
    assert read_own(token, issuer=ORIGIN, resource=RESOURCE).connection == connection
    configured(new)
    with pytest.raises(TokenRefused, match="signature"):
        read_own(token, issuer=ORIGIN, resource=RESOURCE)


def test_a_token_signed_by_a_key_not_published_is_refused(alice):
    connection = connect(alice, roles=("support",))
    token = forge(connection, ORIGIN)
    head, body, _ = token.split(".")
    stranger = ECKey.import_key(pem())
    from joserfc import jwt

    claims = jwt.decode(token, keys.verifying_keys()).claims
    forged = jwt.encode({"alg": "ES256", "typ": "at+jwt"}, claims, KeySet([stranger]))
    with pytest.raises(TokenRefused, match="signature"):
        read_own(forged, issuer=ORIGIN, resource=RESOURCE)


@pytest.mark.parametrize("text", ["not a key", pem().replace("PRIVATE", "PUBLIC")])
def test_a_setting_with_no_usable_key_stops_start_up(configured, text):
    configured(text)
    with pytest.raises(ImproperlyConfigured, match="QUIVER_OAUTH_SIGNING_KEYS"):
        keys.signing_keys()
