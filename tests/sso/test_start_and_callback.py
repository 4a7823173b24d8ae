"""Single sign-on's start and callback against the real provider, without a
browser: what the start sends, where ``next`` may lead, a callback no sign-in
started, a provider whose discovery names another issuer, one that is down."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest

from audit.models import AuditEvent
from sso.views import PENDING, safe_next
from tests.oidc import Provider, running_provider, settings_for
from tests.upstream import free_port

pytestmark = pytest.mark.django_db
HOSTILE_NEXT = [
    "https://evil.example/",
    "//evil.example/",
    "/\\evil.example",
    "\\\\evil.example",
    "javascript:alert(1)",
    "http:/evil.example",
    "/\t/evil.example",
    "/tools/\r\nSet-Cookie: x=1",
    "evil.example",
    "",
]


@pytest.fixture(scope="module")
def provider() -> Iterator[Provider]:
    with running_provider("http://testserver/login/sso/callback/") as running:
        yield running


@pytest.fixture
def sso(provider, settings):
    settings.QUIVER_OIDC = settings_for(provider)
    return provider


def test_the_start_sends_pkce_s256_a_state_and_a_nonce(client, sso):
    answer = client.get("/login/sso/?next=/audit/")
    assert answer.status_code == 302
    location = urlsplit(answer["Location"])
    assert f"{location.scheme}://{location.netloc}" == sso.issuer
    query = {k: v[0] for k, v in parse_qs(location.query).items()}
    assert query["code_challenge_method"] == "S256"
    assert len(query["code_challenge"]) >= 43
    assert query["response_type"] == "code"
    assert query["redirect_uri"] == "http://testserver/login/sso/callback/"
    assert query["nonce"] and query["state"] == client.session[PENDING]["state"]
    assert client.session[PENDING]["next"] == "/audit/"


@pytest.mark.parametrize("value", HOSTILE_NEXT)
def test_next_leads_only_to_quivers_own_paths(value):
    assert safe_next(value) == ""


def test_next_keeps_a_path_with_its_query():
    assert safe_next("/tools/?catalog=default") == "/tools/?catalog=default"


def test_a_callback_no_sign_in_started_is_refused_without_an_audit_row(client, sso):
    answer = client.get("/login/sso/callback/?code=abc&state=xyz")
    assert answer.status_code == 400
    assert "no sign-in was started here" in answer.content.decode()
    assert not AuditEvent.objects.exists()


def test_an_error_from_the_provider_is_refused_naming_only_its_code(client, sso):
    client.get("/login/sso/")
    state = client.session[PENDING]["state"]
    answer = client.get(
        "/login/sso/callback/",
        {"state": state, "error": "<script>x</script>", "error_description": "hi"},
    )
    assert answer.status_code == 400
    event = AuditEvent.objects.get(event_type="sign_in_refused")
    assert event.output["refused"] == "provider: other"


def test_discovery_naming_another_issuer_is_refused(client, provider, settings):
    port = urlsplit(provider.issuer).port
    settings.QUIVER_OIDC = settings_for(provider, issuer=f"http://localhost:{port}")
    answer = client.get("/login/sso/")
    assert answer.status_code == 503
    assert "must match exactly" in answer.content.decode()
    assert PENDING not in client.session


def test_a_provider_that_does_not_answer_is_a_503_naming_it(client, provider, settings):
    down = settings_for(provider, issuer=f"http://127.0.0.1:{free_port()}")
    settings.QUIVER_OIDC = down
    answer = client.get("/login/sso/")
    assert answer.status_code == 503
    assert "identity provider: Acme ID did not answer" in answer.content.decode()


def test_single_sign_on_off_has_no_routes(client, settings):
    settings.QUIVER_OIDC = None
    assert client.get("/login/sso/").status_code == 404
    assert client.get("/login/sso/callback/?code=a&state=b").status_code == 404
