"""Clients known by the URL of their metadata document (the MCP specification's
client ID metadata documents): fetched through the SSRF guard (public addresses
only; http on 127.0.0.1 only where development allows it, as here), kept as
long as their Cache-Control says, checked like a registration, their own
client_id their URL, their redirect URIs matched exactly."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from oauth.models import OAuthClient
from tests.documents import Documents, serving_documents
from tests.oauth.conftest import refusals
from tests.oauth_flow import REDIRECT, authorize_query, pkce, redirected


@pytest.fixture
def documents(settings) -> Iterator[Documents]:
    settings.QUIVER_OAUTH = dataclasses.replace(
        settings.QUIVER_OAUTH, loopback_client_documents=True
    )
    with serving_documents() as served:
        yield served


def document(url: str, **fields):
    return {
        "client_id": url,
        "client_name": "Remote Connector",
        "redirect_uris": [REDIRECT],
        "token_endpoint_auth_method": "none",
        **fields,
    }


def test_a_document_client_is_fetched_shown_and_can_be_approved(
    documents, as_alice, web
):
    url = documents.url + "/client.json"
    documents.put("/client.json", document(url), **{"Cache-Control": "max-age=3600"})
    verifier, challenge = pkce()
    page = as_alice.get(authorize_query(url, challenge))
    assert page.status_code == 200, page.content
    assert "Connect Remote Connector to Quiver?" in page.content.decode()
    answer = as_alice.post(
        authorize_query(url, challenge),
        {"decision": "approve", "all_catalogs": "on", "roles": ["support"]},
    )
    back = redirected(answer["Location"])
    tokens = web.post(
        "/oauth/token",
        {
            "grant_type": "authorization_code",
            "code": back["code"],
            "client_id": url,
            "code_verifier": verifier,
            "redirect_uri": REDIRECT,
        },
    )
    assert tokens.status_code == 200, tokens.content
    assert documents.fetched == ["/client.json"]  # kept for its max-age
    assert OAuthClient.objects.get(client_id=url).kind == "document"


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({"client_id": "https://elsewhere.example/client.json"}, "not its own URL"),
        ({"redirect_uris": ["http://evil.example/cb"]}, "must be https"),
        ({"client_secret": "s3cret"}, "no secret"),
        ({"token_endpoint_auth_method": "client_secret_post"}, "token_endpoint"),
    ],
)
def test_a_document_that_cannot_be_used_is_refused_on_the_page(
    documents, as_alice, fields, why
):
    url = documents.url + "/bad.json"
    documents.put("/bad.json", document(url, **fields))
    _verifier, challenge = pkce()
    answer = as_alice.get(authorize_query(url, challenge))
    assert answer.status_code == 400
    assert "Location" not in answer
    assert why in answer.content.decode()
    [row] = refusals()
    assert row.output["error"] == "invalid_client"


def test_a_document_at_a_private_address_is_never_fetched(documents, as_alice):
    _verifier, challenge = pkce()
    for url in ("https://10.1.2.3/client.json", "https://169.254.169.254/latest"):
        answer = as_alice.get(authorize_query(url, challenge))
        assert answer.status_code == 400
        assert "not a public address" in answer.content.decode() or "denied" in (
            answer.content.decode()
        )


def test_http_documents_on_loopback_need_the_development_setting(as_alice, settings):
    settings.QUIVER_OAUTH = dataclasses.replace(
        settings.QUIVER_OAUTH, loopback_client_documents=False
    )
    with serving_documents() as served:
        url = served.url + "/client.json"
        served.put("/client.json", document(url))
        _verifier, challenge = pkce()
        answer = as_alice.get(authorize_query(url, challenge))
        assert answer.status_code == 400
        assert served.fetched == []


def test_a_redirect_uri_the_document_does_not_list_is_not_redirected_to(
    documents, as_alice
):
    url = documents.url + "/client.json"
    documents.put("/client.json", document(url))
    _verifier, challenge = pkce()
    answer = as_alice.get(
        authorize_query(url, challenge, redirect_uri="http://127.0.0.1:9/evil")
    )
    assert answer.status_code == 400
    assert "Location" not in answer
