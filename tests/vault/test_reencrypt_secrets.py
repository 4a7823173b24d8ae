"""Rotating the key of the sources' secrets: with the new key in
QUIVER_SOURCE_KEY and the old one in QUIVER_SOURCE_OLD_KEYS, ``reencrypt_secrets``
puts every stored secret (header values, client secrets, people's tokens) under
the new key, so the old key can go; a secret no key opens is left and counted."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from sources.models import Source
from sources.secrets import HeadersUnreadable, decrypt_headers, encrypt_headers
from tests.vault.conftest import connection_of
from vault import crypto
from vault.models import Connection, SourceAuthorization
from vault.services.tokens import credential_for

OLD, NEW = "the-old-key-" + "o" * 40, "the-new-key-" + "n" * 40


@pytest.fixture
def under_the_old_key(settings, notes, alice, connect, catalog):
    settings.QUIVER_SOURCE_KEY, settings.QUIVER_SOURCE_OLD_KEYS = OLD, []
    connect(alice, notes, "alice-up")
    Source.objects.create(
        catalog=catalog,
        name="shared",
        url="https://shared.example/mcp",
        headers_encrypted=encrypt_headers(
            {"Authorization": "Bearer shared-secret-1"}, "https://shared.example/mcp"
        ),
    )
    return settings


def reencrypt() -> str:
    out = StringIO()
    call_command("reencrypt_secrets", stdout=out)
    return out.getvalue()


def test_after_reencrypting_the_old_key_can_go(under_the_old_key, alice, notes):
    settings = under_the_old_key
    settings.QUIVER_SOURCE_KEY, settings.QUIVER_SOURCE_OLD_KEYS = NEW, [OLD]
    said = reencrypt()
    assert "connections: 1 re-encrypted, 0 unreadable" in said
    assert "sources: 2 re-encrypted, 0 unreadable" in said
    settings.QUIVER_SOURCE_OLD_KEYS = []
    assert credential_for(alice, notes).headers["Authorization"].startswith("Bearer ")
    shared = Source.objects.get(name="shared")
    assert decrypt_headers(shared) == {"Authorization": "Bearer shared-secret-1"}
    auth = SourceAuthorization.objects.get(source=notes)
    assert crypto.decrypt(auth.client_secret_encrypted, crypto.CLIENT_SECRETS)


def test_without_reencrypting_removing_the_old_key_loses_them(
    under_the_old_key, alice, notes
):
    settings = under_the_old_key
    settings.QUIVER_SOURCE_KEY, settings.QUIVER_SOURCE_OLD_KEYS = NEW, []
    with pytest.raises(HeadersUnreadable):
        decrypt_headers(Source.objects.get(name="shared"))
    with pytest.raises(crypto.Unreadable):
        crypto.decrypt(connection_of(alice, notes).access_encrypted)


def test_a_secret_no_key_opens_is_left_and_counted(under_the_old_key, alice, notes):
    settings = under_the_old_key
    settings.QUIVER_SOURCE_KEY, settings.QUIVER_SOURCE_OLD_KEYS = NEW, []
    before = connection_of(alice, notes).access_encrypted
    assert "connections: 0 re-encrypted, 1 unreadable" in reencrypt()
    assert Connection.objects.get(person=alice).access_encrypted == before
