"""GET /metrics: who may read it, and that it is not part of the API.

The metrics token or an admin of every catalog (key or person) reads it; no
credentials or an unknown key is a 401 (the unknown-key penalty included), any
other caller a 403, and nothing is read for them."""

from __future__ import annotations

import time

import pytest
from drf_spectacular.generators import SchemaGenerator
from prometheus_client.parser import text_string_to_metric_families

from config import ratelimit
from tests.factories import make_client_key, make_user

pytestmark = pytest.mark.django_db
TOKEN = "scrape-token-0123456789abcdef"


@pytest.fixture(autouse=True)
def metrics_token(settings):
    settings.QUIVER_METRICS_TOKEN = TOKEN


def scrape(client, key: str | None = None, **extra):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {key}"} if key else {}
    return client.get("/metrics", **headers, **extra)


def families(response) -> dict:
    text = response.content.decode()
    return {family.name: family for family in text_string_to_metric_families(text)}


def test_the_metrics_token_reads_the_prometheus_text_format(client):
    response = scrape(client, TOKEN)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    found = families(response)
    assert found["quiver_metrics_database_up"].samples[0].value == 1
    assert "quiver_approvals_pending" in found


def test_the_token_is_checked_before_the_database_is_touched(
    client, django_assert_num_queries
):
    """Only the two statements of the database collector run: the token itself
    costs no query, so a scrape answers while the database is down."""
    with django_assert_num_queries(2):
        assert scrape(client, TOKEN).status_code == 200


def test_an_admin_key_of_every_catalog_reads_it(client):
    assert scrape(client, make_client_key("ops", "admin")).status_code == 200


def test_a_signed_in_superuser_reads_it(client):
    client.force_login(make_user("root", superuser=True))
    assert scrape(client).status_code == 200


def test_no_credentials_get_401_with_a_bearer_challenge(client):
    response = scrape(client)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert b"quiver_" not in response.content


@pytest.mark.parametrize(
    "wrong",
    [
        TOKEN[:-1],  # one character short
        TOKEN + "x",
        TOKEN.upper(),
        "qv_not-a-real-key",
    ],
)
def test_a_wrong_token_gets_401_and_nothing(client, wrong):
    response = scrape(client, wrong)
    assert response.status_code == 401
    assert b"quiver_" not in response.content


@pytest.mark.parametrize(
    "wrong", ["scrape-token-guess", TOKEN.upper(), "", "qv_" + "x" * 40]
)
def test_a_wrong_token_of_any_shape_waits_as_an_unknown_key_does(client, wrong):
    started = time.monotonic()
    assert (
        client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {wrong}").status_code == 401
    )
    assert time.monotonic() - started >= ratelimit.UNKNOWN_KEY_DELAY_S


def test_wrong_tokens_and_unknown_keys_share_one_budget_an_address(client, monkeypatch):
    """35 guesses from one address, every other one shaped like a key: the 31st
    and on are 429s, as 31 unknown keys would be."""
    monkeypatch.setattr(ratelimit, "UNKNOWN_KEY_DELAY_S", 0)
    monkeypatch.setattr(ratelimit, "clock", lambda: 1_900_000_000.0)
    key_shaped = "qv_abcdefghij_" + "x" * 32
    guesses = [key_shaped if n % 2 else f"guess-{n}" for n in range(35)]
    codes = [
        scrape(client, guess, REMOTE_ADDR="198.51.100.39").status_code
        for guess in guesses
    ]
    assert codes == [401] * 30 + [429] * 5
    refused = scrape(client, "guess-36", REMOTE_ADDR="198.51.100.39")
    assert int(refused["Retry-After"]) >= 1
    assert refused.json()["retryable"] is True
    assert "unknown API keys a minute" in refused.json()["detail"]
    # The token itself still reads, and another address is not held back.
    assert scrape(client, TOKEN, REMOTE_ADDR="198.51.100.39").status_code == 200
    assert scrape(client, "guess", REMOTE_ADDR="198.51.100.40").status_code == 401


def test_a_refused_scrape_says_it_may_not_be_sent_again_as_it_is(client):
    refused = scrape(client, "guess", REMOTE_ADDR="198.51.100.41")

    assert refused.status_code == 401
    assert refused.json()["retryable"] is False
    assert not refused.has_header("Retry-After")


def test_without_a_token_configured_an_empty_bearer_is_still_refused(client, settings):
    settings.QUIVER_METRICS_TOKEN = ""
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer").status_code == 401


@pytest.mark.parametrize("scope", ["agent", "curator", "compliance"])
def test_a_key_that_is_not_an_admin_gets_403(client, scope):
    response = scrape(client, make_client_key(f"{scope}-key", scope))
    assert response.status_code == 403
    assert b"quiver_" not in response.content


def test_an_admin_key_limited_to_some_catalogs_gets_403(client):
    """Labels name every catalog and source; such a key must not learn them."""
    key = make_client_key("partial-admin", "admin", catalogs=["default"])
    response = scrape(client, key)
    assert response.status_code == 403
    assert b"quiver_" not in response.content


@pytest.mark.parametrize("group", ["curator", "compliance", "approver"])
def test_a_signed_in_person_who_is_not_an_admin_gets_403(client, group):
    client.force_login(make_user(f"someone-{group}", groups=(group,)))
    assert scrape(client).status_code == 403


def test_only_get_is_answered(client):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}
    assert client.post("/metrics", **headers).status_code == 405


def test_metrics_is_not_part_of_the_api_schema():
    schema = SchemaGenerator().get_schema(request=None, public=True)
    assert not [path for path in schema["paths"] if "metrics" in path]
