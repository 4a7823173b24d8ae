"""What Quiver says about /mcp and about itself: RFC 9728's protected resource
metadata (at the root and path-suffixed URLs), RFC 8414's authorization server
metadata, and the keys its tokens are signed with; from the request's own
origin by default, from the settings when they name the public URLs."""

from __future__ import annotations

import dataclasses

import pytest
from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata

from tests.oauth.conftest import ORIGIN, RESOURCE


@pytest.mark.parametrize(
    "path",
    [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ],
)
def test_the_resource_metadata_names_mcp_and_its_authorization_server(web, path):
    answer = web.get(path)
    assert answer.status_code == 200
    assert answer["Access-Control-Allow-Origin"] == "*"
    document = answer.json()
    assert ProtectedResourceMetadata.model_validate(document)
    assert document["resource"] == RESOURCE
    assert document["authorization_servers"] == [ORIGIN]
    assert document["scopes_supported"] == ["mcp", "api"]
    assert document["bearer_methods_supported"] == ["header"]


def test_the_authorization_server_metadata_offers_only_the_code_flow_with_s256(web):
    answer = web.get("/.well-known/oauth-authorization-server")
    assert answer.status_code == 200
    document = answer.json()
    parsed = OAuthMetadata.model_validate(document)
    assert str(parsed.issuer) == ORIGIN
    assert document["response_types_supported"] == ["code"]
    assert document["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert document["code_challenge_methods_supported"] == ["S256"]
    assert document["token_endpoint_auth_methods_supported"] == ["none"]
    assert document["authorization_response_iss_parameter_supported"] is True
    assert document["client_id_metadata_document_supported"] is True
    assert document["registration_endpoint"] == f"{ORIGIN}/oauth/register"
    assert document["jwks_uri"] == f"{ORIGIN}/oauth/jwks.json"


def test_the_public_urls_come_from_the_settings_when_set(web, settings):
    settings.QUIVER_OAUTH = dataclasses.replace(
        settings.QUIVER_OAUTH,
        resource="https://quiver.example.com/mcp",
        issuer="https://quiver.example.com",
    )
    document = web.get("/.well-known/oauth-protected-resource").json()
    assert document["resource"] == "https://quiver.example.com/mcp"
    assert document["authorization_servers"] == ["https://quiver.example.com"]
    issuer = web.get("/.well-known/oauth-authorization-server").json()["issuer"]
    assert issuer == "https://quiver.example.com"


def test_a_company_server_is_listed_and_quivers_own_can_be_turned_off(web, settings):
    external = dataclasses.replace(
        settings.QUIVER_OAUTH,
        server=False,
        external=_external("https://login.example.com/oauth2/default"),
    )
    settings.QUIVER_OAUTH = external
    document = web.get("/.well-known/oauth-protected-resource").json()
    assert document["authorization_servers"] == [
        "https://login.example.com/oauth2/default"
    ]
    assert web.get("/.well-known/oauth-authorization-server").status_code == 404
    assert web.get("/oauth/jwks.json").status_code == 404


def test_a_host_django_does_not_allow_gets_no_metadata(db):
    from django.test import Client

    answer = Client(HTTP_HOST="evil.example").get(
        "/.well-known/oauth-protected-resource"
    )
    assert answer.status_code == 400


def test_the_keys_are_published_by_thumbprint_without_their_private_half(web):
    keys = web.get("/oauth/jwks.json").json()["keys"]
    assert len(keys) == 1
    [key] = keys
    assert key["kty"] == "EC" and key["alg"] == "ES256" and key["kid"]
    assert "d" not in key


def _external(issuer):
    from config.env_oauth import ExternalServer

    return ExternalServer(
        issuer=issuer,
        audience="",
        person_claim="sub",
        jwks_url="",
        introspection_url="",
        client_id="",
        client_secret="",
    )
