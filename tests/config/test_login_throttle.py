"""Sign-in throttling per account and per address; unknown bearer keys slowed."""

from __future__ import annotations

import time

import pytest
import redis
from django.conf import settings

from config import login, ratelimit

pytestmark = pytest.mark.django_db
NOW = 1_800_000_000.0 + 60  # one minute into a 15-minute window


@pytest.fixture(autouse=True)
def fresh_counter(monkeypatch):
    """Counts start from zero in the real Redis, at a clock standing still."""
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    for key in broker.scan_iter("quiver:rate:*"):
        broker.delete(key)
    monkeypatch.setattr(ratelimit, "COUNTER", ratelimit.Counter())
    monkeypatch.setattr(ratelimit, "clock", lambda: NOW)


def sign_in(client, username, password, address="10.0.0.1", path="/login/"):
    return client.post(
        path, {"username": username, "password": password}, REMOTE_ADDR=address
    )


def signed_in(client):
    return "_auth_user_id" in client.session


def test_five_wrong_passwords_lock_the_account_even_for_the_right_one(client, member):
    for _ in range(5):
        assert sign_in(client, "mo", "wrong").status_code == 200
    response = sign_in(client, "mo", "pw-12345678")
    assert response.status_code == 200
    assert not signed_in(client)
    html = response.content.decode()
    assert "Too many failed sign-ins for this account" in html
    assert "Wait 14 min (until" in html


def test_the_lock_names_its_end_and_lifts_after_it(client, member, monkeypatch):
    for _ in range(5):
        sign_in(client, "mo", "wrong")
    monkeypatch.setattr(ratelimit, "clock", lambda: NOW + login.LOCK_S)
    assert sign_in(client, "mo", "pw-12345678").status_code == 302
    assert signed_in(client)


def test_the_account_lock_holds_from_another_address(client, member):
    for n in range(5):
        sign_in(client, "mo", "wrong", address=f"10.0.1.{n}")
    sign_in(client, "mo", "pw-12345678", address="10.0.2.1")
    assert not signed_in(client)


def test_four_wrong_passwords_then_the_right_one_signs_in_and_clears_the_count(
    client, member
):
    for _ in range(4):
        sign_in(client, "mo", "wrong")
    assert sign_in(client, "mo", "pw-12345678").status_code == 302
    client.logout()
    for _ in range(4):
        sign_in(client, "mo", "wrong")
    assert sign_in(client, "mo", "pw-12345678").status_code == 302


def test_twenty_failures_from_one_address_lock_that_address(client, member):
    for n in range(20):
        sign_in(client, f"guess{n}", "wrong", address="10.9.9.9")
    response = sign_in(client, "mo", "pw-12345678", address="10.9.9.9")
    assert "Too many failed sign-ins from your address" in response.content.decode()
    assert not signed_in(client)
    assert sign_in(client, "mo", "pw-12345678", address="10.9.9.10").status_code == 302


def test_the_admin_sign_in_page_shares_the_account_lock(client, admin_user):
    for _ in range(5):
        sign_in(client, "root", "wrong", path="/admin/login/")
    response = sign_in(client, "root", "pw-12345678", path="/admin/login/")
    assert "Too many failed sign-ins" in response.content.decode()
    assert not signed_in(client)


def test_an_unknown_bearer_key_is_answered_slowly(api):
    api.credentials(HTTP_AUTHORIZATION="Bearer qv_abcdefghij_" + "x" * 32)
    started = time.monotonic()
    response = api.get("/api/v1/tools/")
    assert response.status_code == 401
    assert time.monotonic() - started >= ratelimit.UNKNOWN_KEY_DELAY_S


def test_many_unknown_keys_from_one_address_get_429(api, monkeypatch):
    monkeypatch.setattr(ratelimit, "UNKNOWN_KEY_DELAY_S", 0)
    api.credentials(HTTP_AUTHORIZATION="Bearer qv_abcdefghij_" + "x" * 32)
    codes = [api.get("/api/v1/tools/").status_code for _ in range(31)]
    assert codes == [401] * 30 + [429]
    response = api.get("/api/v1/tools/")
    assert response["Retry-After"]
    assert "unknown API keys a minute" in response.json()["detail"]
