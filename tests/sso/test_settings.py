"""Single sign-on's settings, read from the environment (config.env.oidc_provider)."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import oidc_provider

ISSUER = "https://login.example.com/realms/acme"


@pytest.fixture
def env(monkeypatch):
    for name in ("QUIVER_OIDC_ISSUER", "QUIVER_OIDC_CLIENT_ID", "QUIVER_OIDC_SCOPES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("QUIVER_OIDC_CLIENT_SECRET", raising=False)

    def set_env(**values: str) -> None:
        for name, value in values.items():
            monkeypatch.setenv(name, value)

    return set_env


def test_no_issuer_means_single_sign_on_is_off(env):
    assert oidc_provider() is None


def test_an_issuer_needs_a_client_id_and_secret(env):
    env(QUIVER_OIDC_ISSUER=ISSUER)
    with pytest.raises(ImproperlyConfigured, match="QUIVER_OIDC_CLIENT_ID"):
        oidc_provider()


def test_the_secret_is_read_from_a_file(env, tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("s3cret\n")
    env(
        QUIVER_OIDC_ISSUER=ISSUER,
        QUIVER_OIDC_CLIENT_ID="quiver",
        QUIVER_OIDC_CLIENT_SECRET_FILE=str(secret),
        QUIVER_OIDC_SCOPES="email groups",
    )
    provider = oidc_provider()
    assert provider is not None and provider.client_secret == "s3cret"
    assert provider.scopes == ("openid", "email", "groups")


@pytest.mark.parametrize(
    "issuer",
    ["http://login.example.com", "ftp://login.example.com", f"{ISSUER}?x=1"],
)
def test_an_issuer_must_be_https_but_on_loopback(env, issuer):
    env(
        QUIVER_OIDC_ISSUER=issuer,
        QUIVER_OIDC_CLIENT_ID="q",
        QUIVER_OIDC_CLIENT_SECRET="s",
    )
    with pytest.raises(ImproperlyConfigured, match="QUIVER_OIDC_ISSUER"):
        oidc_provider()


def test_a_loopback_issuer_may_be_http(env):
    env(
        QUIVER_OIDC_ISSUER="http://127.0.0.1:9000",
        QUIVER_OIDC_CLIENT_ID="q",
        QUIVER_OIDC_CLIENT_SECRET="s",
    )
    assert oidc_provider() is not None
