"""A source whose server answers 401 asking for OAuth: its first sync discovers
the authorization (RFC 9728, then RFC 8414), registers Quiver (a client ID
metadata document, dynamic registration, or an admin's client id) and leaves the
source waiting for a person's authorization, not failed. Every document is
fetched through the sources' guard, and a document that lies is refused naming
what it got wrong."""

from __future__ import annotations

from typing import Any

import pytest

from audit.models import AuditEvent
from sources.models import SourceStatus
from tests.oauth_upstream import Documents, running_documents, running_oauth_upstream
from tests.vault.conftest import add_oauth_source, browser_as, come_back, start
from vault.models import Connection, Registration, SourceAuthorization


def actions() -> list[str]:
    found = AuditEvent.objects.filter(event_type="upstream_auth").order_by("pk")
    return [e.input["action"] for e in found]


def test_a_source_that_asks_for_oauth_waits_for_authorization_not_failed(
    notes, oauth_upstream
):
    assert notes.status == SourceStatus.AUTHORIZE
    assert notes.last_error.startswith("waiting for a person to connect their account")
    auth = SourceAuthorization.objects.get(source=notes)
    assert auth.resource == oauth_upstream.url
    assert auth.issuer == oauth_upstream.issuer
    assert auth.resource_metadata_url.endswith(
        "/.well-known/oauth-protected-resource/mcp"
    )
    assert auth.scope == "notes"
    assert auth.registration == Registration.NONE  # no public URL: at first connect
    assert actions() == ["discovered"]


def test_with_a_public_url_quiver_registers_at_discovery(
    settings, oauth_upstream, admin_user
):
    settings.QUIVER_PUBLIC_URL = "http://quiver.test"
    source = add_oauth_source(oauth_upstream.url, admin_user)
    auth = SourceAuthorization.objects.get(source=source)
    assert auth.registration == Registration.DYNAMIC
    assert (
        auth.redirect_uri
        == f"http://quiver.test/upstream-accounts/callback/{source.pk}/"
    )
    client = oauth_upstream.authority.clients[auth.client_id]
    assert client.token_endpoint_auth_method == "client_secret_post"
    assert auth.client_secret_encrypted.startswith("gAAAA")
    assert client.client_secret not in auth.client_secret_encrypted
    assert actions() == ["discovered", "registered"]


def test_the_source_page_shows_its_authorization(notes, admin_user, client):
    client.force_login(admin_user)
    page = client.get(f"/sources/{notes.pk}/").content.decode()
    assert 'data-testid="source-authorization"' in page
    assert "Waiting for a person&#x27;s authorization" in page


@pytest.fixture
def documents() -> Any:
    with running_documents() as served:
        served.challenge = (
            f'Bearer resource_metadata="{served.base}/.well-known/'
            'oauth-protected-resource/mcp"'
        )
        served.docs["/.well-known/oauth-protected-resource/mcp"] = {
            "resource": served.url,
            "authorization_servers": [served.base],
        }
        served.docs["/.well-known/oauth-authorization-server"] = {
            "issuer": served.base,
            "authorization_endpoint": f"{served.base}/authorize",
            "token_endpoint": f"{served.base}/token",
            "response_types_supported": ["code"],
            "code_challenge_methods_supported": ["S256"],
        }
        yield served


def server_metadata(documents: Documents) -> dict[str, Any]:
    found: dict[str, Any] = documents.docs["/.well-known/oauth-authorization-server"]
    return found


def failed_with(documents: Documents, admin_user: Any) -> str:
    source = add_oauth_source(documents.url, admin_user)
    assert source.status == SourceStatus.ERROR
    assert not SourceAuthorization.objects.filter(source=source).exists()
    return source.last_error


def test_resource_metadata_naming_another_resource_is_refused(documents, admin_user):
    documents.docs["/.well-known/oauth-protected-resource/mcp"]["resource"] = (
        "https://elsewhere.example/mcp"
    )
    assert "resource metadata: names the resource 'https://elsewhere.example/mcp'" in (
        failed_with(documents, admin_user)
    )


def test_server_metadata_naming_another_issuer_is_refused(documents, admin_user):
    server_metadata(documents)["issuer"] = "https://evil.example"
    error = failed_with(documents, admin_user)
    assert "names the issuer 'https://evil.example'" in error
    assert "they must match exactly (RFC 8414)" in error


def test_a_server_without_pkce_s256_is_refused(documents, admin_user):
    server_metadata(documents)["code_challenge_methods_supported"] = ["plain"]
    assert "must list S256 (PKCE)" in failed_with(documents, admin_user)


def test_an_endpoint_in_clear_on_another_host_is_refused(documents, admin_user):
    server_metadata(documents)["token_endpoint"] = "http://tokens.example/token"
    assert "token_endpoint: must be an https URL" in failed_with(documents, admin_user)


def test_resource_metadata_at_a_cloud_metadata_address_is_refused_by_the_guard(
    documents, admin_user
):
    documents.challenge = (
        'Bearer resource_metadata="https://169.254.169.254/latest/meta-data"'
    )
    error = failed_with(documents, admin_user)
    assert "169.254.169.254 is a denied address (cloud metadata)" in error


def test_a_metadata_document_past_the_cap_is_refused(documents, admin_user):
    big = {**server_metadata(documents), "padding": "x" * 300_000}
    documents.docs["/.well-known/oauth-authorization-server"] = big
    assert "the answer passed" in failed_with(documents, admin_user)


def test_a_server_that_supports_metadata_documents_gets_quivers(
    documents, admin_user, settings, client
):
    settings.QUIVER_PUBLIC_URL = "https://quiver.example"
    server_metadata(documents)["client_id_metadata_document_supported"] = True
    source = add_oauth_source(documents.url, admin_user)
    auth = SourceAuthorization.objects.get(source=source)
    document_url = f"https://quiver.example/upstream-accounts/clients/{source.pk}/"
    assert auth.registration == Registration.METADATA_DOCUMENT
    assert auth.client_id == document_url
    served = client.get(f"/upstream-accounts/clients/{source.pk}/").json()
    assert served["client_id"] == document_url
    assert served["redirect_uris"] == [
        f"https://quiver.example/upstream-accounts/callback/{source.pk}/"
    ]
    assert served["token_endpoint_auth_method"] == "none"


def test_a_server_that_registers_nobody_waits_for_an_admins_client_id(admin_user):
    with running_oauth_upstream(registration=False) as server:
        source = add_oauth_source(server.url, admin_user)
        assert source.status == SourceStatus.AUTHORIZE
        assert source.last_error.startswith("waiting for an admin to give Quiver")
        callback = f"http://testserver/upstream-accounts/callback/{source.pk}/"
        server.authority.register_by_hand("quiver-by-hand", "s3cret-by-hand", callback)
        admin = browser_as(admin_user)
        saved = admin.post(
            f"/sources/{source.pk}/oauth-client/",
            {"client_id": "quiver-by-hand", "client_secret": "s3cret-by-hand"},
        )
        assert saved.status_code == 302
        auth = SourceAuthorization.objects.get(source=source)
        assert auth.registration == Registration.ADMIN
        assert auth.token_endpoint_auth_method == "client_secret_post"
        browser = browser_as(admin_user)
        back = server.approve(start(browser, source), "root-up")
        assert come_back(browser, back).status_code == 302
        assert Connection.objects.filter(source=source).count() == 1
        assert actions() == ["discovered", "registered", "connected"]
        registered = AuditEvent.objects.get(input__action="registered")
        assert "s3cret-by-hand" not in str(registered.input)


def test_only_an_admin_gives_the_client_id(notes, alice):
    answer = browser_as(alice).post(
        f"/sources/{notes.pk}/oauth-client/", {"client_id": "mine"}
    )
    assert answer.status_code in (403, 404)
    assert SourceAuthorization.objects.get(source=notes).client_id == ""
