"""Quiver's authorization server as a client meets it, in process: registration,
the consent page, the code exchange with PKCE, refresh rotation, revocation;
and every way a request can be wrong refused (and recorded when it concerns
someone)."""

from __future__ import annotations

import json

import pytest

from audit.models import AuditEvent
from catalog.services.catalogs import create_catalog
from identity.models import ApiClient, UserCatalogAccess
from oauth.models import Connection, TokenFamily
from tests.oauth.conftest import ORIGIN, RESOURCE, refusals
from tests.oauth_flow import REDIRECT, authorize_query, pkce, redirected

pytestmark = pytest.mark.django_db


def register(web, **metadata):
    body = {"client_name": "Probe", "redirect_uris": [REDIRECT], **metadata}
    return web.post(
        "/oauth/register", json.dumps(body), content_type="application/json"
    )


def registered(web, **metadata):
    answer = register(web, **metadata)
    assert answer.status_code == 201, answer.content
    return answer.json()


def approve(browser, url, **form):
    fields = {"decision": "approve", "roles": ["support"], "all_catalogs": "on", **form}
    return browser.post(url, fields)


def code_for(browser, client_id, challenge, **extra):
    answer = approve(browser, authorize_query(client_id, challenge, **extra))
    assert answer.status_code == 302, answer.content
    return redirected(answer["Location"])


def exchange(web, client_id, code, verifier, **extra):
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "client_id": client_id,
        "code_verifier": verifier,
        "redirect_uri": REDIRECT,
        "resource": RESOURCE,
        **extra,
    }
    return web.post("/oauth/token", form)


def test_a_registered_client_is_public_with_no_secret(web):
    client = registered(web, scope="mcp")
    assert client["token_endpoint_auth_method"] == "none"
    assert "client_secret" not in client
    assert client["redirect_uris"] == [REDIRECT]
    row = AuditEvent.objects.get(event_type="oauth_client")
    assert row.output["id"] == client["client_id"]


@pytest.mark.parametrize(
    ("uris", "why"),
    [
        (["http://evil.example/cb"], "must be https"),
        (["https://app.example/cb#frag"], "fragment"),
        (["javascript:alert(1)"], "must be https"),
        ([], "redirect_uris"),
    ],
)
def test_a_registration_with_a_bad_redirect_uri_is_refused(web, uris, why):
    answer = register(web, redirect_uris=uris)
    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_client_metadata"
    assert why in answer.json()["error_description"]


def test_a_confidential_client_cannot_register(web):
    answer = register(web, token_endpoint_auth_method="client_secret_basic")
    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_client_metadata"


def test_the_consent_page_shows_the_client_and_where_it_goes_back(web, as_alice):
    client = registered(web)
    _verifier, challenge = pkce()
    page = as_alice.get(authorize_query(client["client_id"], challenge))
    assert page.status_code == 200
    text = page.content.decode()
    assert "Connect Probe to Quiver?" in text
    assert REDIRECT in text
    assert page["Cache-Control"] == "no-store"


def test_the_authorization_endpoint_needs_a_signed_in_person(web):
    client = registered(web)
    _verifier, challenge = pkce()
    answer = web.get(authorize_query(client["client_id"], challenge))
    assert answer.status_code == 302
    assert answer["Location"].startswith("/login/?next=/oauth/authorize")


def test_the_code_flow_gives_tokens_bound_to_the_resource(web, as_alice, alice):
    client = registered(web)
    verifier, challenge = pkce()
    back = code_for(as_alice, client["client_id"], challenge, state="xyz")
    assert back["state"] == "xyz"
    assert back["iss"] == ORIGIN
    answer = exchange(web, client["client_id"], back["code"], verifier)
    assert answer.status_code == 200, answer.content
    tokens = answer.json()
    assert tokens["token_type"].lower() == "bearer"
    assert tokens["refresh_token"]
    assert tokens["scope"] == "mcp"
    assert answer["Cache-Control"] == "no-store"
    connection = Connection.objects.get(person=alice)
    assert connection.principal.kind == "oauth"
    assert connection.principal.person_id == alice.pk
    assert AuditEvent.objects.filter(event_type="oauth_consent").count() == 1
    assert AuditEvent.objects.filter(event_type="oauth_token").count() == 1


def test_a_denial_sends_access_denied_back_with_the_state_and_is_recorded(
    web, as_alice
):
    client = registered(web)
    _verifier, challenge = pkce()
    url = authorize_query(client["client_id"], challenge, state="st")
    answer = as_alice.post(url, {"decision": "deny"})
    back = redirected(answer["Location"])
    assert (back["error"], back["state"], back["iss"]) == (
        "access_denied",
        "st",
        ORIGIN,
    )
    assert "code" not in back
    row = AuditEvent.objects.get(event_type="oauth_consent")
    assert row.output == {"approved": False}
    assert not Connection.objects.exists()


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"code_challenge_method": "plain"}, "invalid_request"),
        ({"code_challenge": ""}, "invalid_request"),
        ({"response_type": "token"}, "unsupported_response_type"),
        ({"scope": "mcp admin"}, "invalid_scope"),
        ({"resource": "https://other.example/mcp"}, "invalid_target"),
        ({"scope": "mcp unsafe"}, "invalid_scope"),
        ({"scope": "mcp role:billing"}, "invalid_scope"),
    ],
)
def test_a_bad_authorization_request_goes_back_refused_and_is_recorded(
    web, as_alice, change, error
):
    """No plain PKCE, no implicit flow, no scope beyond Quiver's or beyond what
    the person holds (a catalog, role or unsafe tools), no other resource."""
    client = registered(web)
    _verifier, challenge = pkce()
    params = {"state": "st", **change}
    answer = as_alice.get(authorize_query(client["client_id"], challenge, **params))
    assert answer.status_code == 302, answer.content
    back = redirected(answer["Location"])
    assert back["error"] == error
    assert back["state"] == "st"
    assert back["iss"] == ORIGIN
    assert answer["Location"].startswith(REDIRECT)
    [row] = refusals()
    assert row.output["error"] == error
    assert row.actor_name == "alice"
    assert row.input["client"]["id"] == client["client_id"]


def test_a_catalog_the_person_may_not_see_is_refused_like_one_that_does_not_exist(
    web, as_alice, alice
):
    create_catalog("secret", "Secret", actor=None)
    UserCatalogAccess.objects.create(user=alice, catalogs=["default"])
    client = registered(web)
    _verifier, challenge = pkce()
    for slug in ("secret", "nowhere"):
        url = authorize_query(
            client["client_id"], challenge, scope=f"mcp catalog:{slug}"
        )
        back = redirected(as_alice.get(url)["Location"])
        assert back["error"] == "invalid_scope"
        assert "no catalog" in back["error_description"]
    assert len(refusals()) == 2


def test_a_redirect_uri_not_registered_is_never_redirected_to(web, as_alice):
    client = registered(web)
    _verifier, challenge = pkce()
    url = authorize_query(
        client["client_id"], challenge, redirect_uri="http://127.0.0.1:8976/other"
    )
    answer = as_alice.get(url)
    assert answer.status_code == 400
    assert "Location" not in answer
    assert "cannot be approved" in answer.content.decode()
    [row] = refusals()
    assert row.output["error"] == "invalid_request"


def test_a_redirect_uri_must_match_exactly(web, as_alice):
    client = registered(web)
    _verifier, challenge = pkce()
    for near in (REDIRECT + "/", REDIRECT.upper(), REDIRECT + "?x=1"):
        answer = as_alice.get(
            authorize_query(client["client_id"], challenge, redirect_uri=near)
        )
        assert answer.status_code == 400, near


def test_an_unknown_client_is_refused_on_the_page(as_alice):
    _verifier, challenge = pkce()
    answer = as_alice.get(authorize_query("nobody", challenge))
    assert answer.status_code == 400
    assert "Location" not in answer


def test_a_wrong_code_verifier_is_refused_recorded_and_burns_the_code(web, as_alice):
    client = registered(web)
    verifier, challenge = pkce()
    back = code_for(as_alice, client["client_id"], challenge)
    wrong, _ = pkce()
    answer = exchange(web, client["client_id"], back["code"], wrong)
    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_grant"
    again = exchange(web, client["client_id"], back["code"], verifier)
    assert again.status_code == 400
    details = [row.output["detail"] for row in refusals()]
    assert details[0] == "Code challenge failed."
    assert "used before" in details[1]


def test_a_replayed_code_is_refused_and_revokes_what_it_gave(web, as_alice):
    client = registered(web)
    verifier, challenge = pkce()
    back = code_for(as_alice, client["client_id"], challenge)
    first = exchange(web, client["client_id"], back["code"], verifier)
    assert first.status_code == 200
    replay = exchange(web, client["client_id"], back["code"], verifier)
    assert replay.status_code == 400
    assert replay.json()["error"] == "invalid_grant"
    family = TokenFamily.objects.get()
    assert family.revoked is not None
    assert family.revoked_reason == "code replayed"
    assert AuditEvent.objects.filter(event_type="oauth_revoked").count() == 1
    [row] = refusals()
    assert row.input["client"]["id"] == client["client_id"]
    assert row.input["acting_for"]["person"] == "alice"
    refreshed = web.post(
        "/oauth/token",
        {
            "grant_type": "refresh_token",
            "refresh_token": first.json()["refresh_token"],
            "client_id": client["client_id"],
        },
    )
    assert refreshed.status_code == 400


def test_a_code_for_another_redirect_uri_or_client_is_refused(web, as_alice):
    client = registered(web)
    other = registered(web)
    verifier, challenge = pkce()
    back = code_for(as_alice, client["client_id"], challenge)
    elsewhere = exchange(
        web, client["client_id"], back["code"], verifier, redirect_uri=REDIRECT + "x"
    )
    assert elsewhere.json()["error"] == "invalid_grant"
    back = code_for(as_alice, client["client_id"], challenge)
    stolen = exchange(web, other["client_id"], back["code"], verifier)
    assert stolen.json()["error"] == "invalid_grant"


def test_an_unknown_code_is_a_guess_not_a_record(web):
    client = registered(web)
    verifier, _challenge = pkce()
    answer = exchange(web, client["client_id"], "made-up-code", verifier)
    assert answer.json()["error"] == "invalid_grant"
    assert refusals() == []


def test_the_token_endpoint_takes_nothing_in_its_url(web, as_alice):
    client = registered(web)
    verifier, challenge = pkce()
    back = code_for(as_alice, client["client_id"], challenge)
    answer = web.post(f"/oauth/token?code={back['code']}", {"grant_type": "x"})
    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_request"
    assert web.get("/oauth/token").status_code == 405


def test_a_refresh_rotates_and_a_reused_refresh_token_revokes_the_family(web, as_alice):
    client = registered(web)
    verifier, challenge = pkce()
    back = code_for(as_alice, client["client_id"], challenge)
    tokens = exchange(web, client["client_id"], back["code"], verifier).json()

    def refresh(token):
        return web.post(
            "/oauth/token",
            {
                "grant_type": "refresh_token",
                "refresh_token": token,
                "client_id": client["client_id"],
            },
        )

    rotated = refresh(tokens["refresh_token"])
    assert rotated.status_code == 200, rotated.content
    fresh = rotated.json()
    assert fresh["refresh_token"] != tokens["refresh_token"]
    assert fresh["access_token"] != tokens["access_token"]
    reused = refresh(tokens["refresh_token"])
    assert reused.status_code == 400
    assert reused.json()["error"] == "invalid_grant"
    assert TokenFamily.objects.get().revoked_reason == "refresh token reused"
    assert refresh(fresh["refresh_token"]).status_code == 400
    assert "used before" in refusals()[0].output["detail"]


def test_revoking_a_refresh_token_revokes_its_grant(web, as_alice):
    client = registered(web)
    verifier, challenge = pkce()
    back = code_for(as_alice, client["client_id"], challenge)
    tokens = exchange(web, client["client_id"], back["code"], verifier).json()
    answer = web.post(
        "/oauth/revoke",
        {
            "token": tokens["refresh_token"],
            "token_type_hint": "refresh_token",
            "client_id": client["client_id"],
        },
    )
    assert answer.status_code == 200
    assert TokenFamily.objects.get().revoked is not None
    unknown = web.post(
        "/oauth/revoke", {"token": "nothing", "client_id": client["client_id"]}
    )
    assert unknown.status_code == 200


def test_a_person_cannot_approve_more_than_they_hold(web, as_alice):
    client = registered(web)
    _verifier, challenge = pkce()
    url = authorize_query(client["client_id"], challenge)
    answer = approve(as_alice, url, roles=["support", "billing"])
    assert answer.status_code == 400
    assert not Connection.objects.exists()


def test_approving_again_changes_the_one_connection(web, as_alice, alice):
    client = registered(web)
    _verifier, challenge = pkce()
    url = authorize_query(client["client_id"], challenge)
    approve(as_alice, url)
    approve(as_alice, url, roles=[])
    [connection] = Connection.objects.filter(person=alice)
    assert connection.principal.roles == []
    assert ApiClient.objects.filter(kind="oauth").count() == 1
