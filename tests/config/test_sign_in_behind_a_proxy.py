"""Sign-in throttling cannot lock everyone out.

Limits count per account and per client address; the address comes from
``X-Forwarded-For`` only when the peer is one of ``QUIVER_TRUSTED_PROXIES``, and
failures typed as unknown names never count against a real account.
"""

from __future__ import annotations

import ipaddress
import secrets

import pytest
import redis
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.test import RequestFactory

from config import ratelimit
from config.env import env_networks
from config.http import client_address

pytestmark = pytest.mark.django_db
NOW = 1_800_000_000.0 + 60  # one minute into a 15-minute window
PROXY = "10.0.0.2"
ATTACKER = "203.0.113.66"
ADMIN = "198.51.100.7"


@pytest.fixture(autouse=True)
def fresh_counter(monkeypatch, settings):
    """Counts start from zero in the real Redis, behind one trusted proxy."""
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    for key in broker.scan_iter("quiver:rate:*"):
        broker.delete(key)
    monkeypatch.setattr(ratelimit, "COUNTER", ratelimit.Counter())
    monkeypatch.setattr(ratelimit, "clock", lambda: NOW)
    settings.QUIVER_TRUSTED_PROXIES = (ipaddress.ip_network("10.0.0.0/24"),)


def sign_in(client, username, password, peer=PROXY, forwarded=None, path="/login/"):
    headers = {} if forwarded is None else {"HTTP_X_FORWARDED_FOR": forwarded}
    return client.post(
        path,
        {"username": username, "password": password},
        REMOTE_ADDR=peer,
        **headers,
    )


def signed_in(client):
    return "_auth_user_id" in client.session


def page(response):
    return response.content.decode()


def test_twenty_random_names_from_one_client_behind_the_proxy_leave_the_admin_in(
    client, admin_user
):
    for _ in range(20):
        sign_in(client, secrets.token_hex(6), "wrong", forwarded=ATTACKER)
    locked = sign_in(client, "root", "pw-12345678", forwarded=ATTACKER)
    assert "Too many failed sign-ins from your address" in page(locked)
    assert sign_in(client, "root", "pw-12345678", forwarded=ADMIN).status_code == 302
    assert signed_in(client)


def test_the_same_attack_through_a_second_trusted_proxy_is_still_one_client(
    client, admin_user
):
    for n in range(20):
        sign_in(client, f"guess{n}", "wrong", forwarded=f"{ATTACKER}, 10.0.0.9")
    response = sign_in(client, "root", "pw-12345678", forwarded=f"{ATTACKER}")
    assert "from your address" in page(response)
    assert not signed_in(client)


def test_a_client_behind_the_proxy_cannot_rotate_its_address_by_prepending_hops(
    client, admin_user
):
    for n in range(20):
        spoofed = f"192.0.2.{n}, {ATTACKER}"  # the proxy appended the real peer
        sign_in(client, f"guess{n}", "wrong", forwarded=spoofed)
    response = sign_in(client, "x", "y", forwarded=f"192.0.2.99, {ATTACKER}")
    assert "from your address" in page(response)


def test_forwarded_for_from_an_untrusted_peer_is_ignored(client, admin_user):
    for n in range(20):
        sign_in(client, f"guess{n}", "wrong", peer=ATTACKER, forwarded=f"192.0.2.{n}")
    response = sign_in(client, "root", "pw-12345678", peer=ATTACKER, forwarded=ADMIN)
    assert "from your address" in page(response)
    assert not signed_in(client)
    assert sign_in(client, "root", "pw-12345678", peer=ADMIN).status_code == 302


def test_an_untrusted_peer_cannot_lock_another_address_by_naming_it(client, admin_user):
    for n in range(20):
        sign_in(client, f"guess{n}", "wrong", peer=ATTACKER, forwarded=ADMIN)
    assert sign_in(client, "root", "pw-12345678", forwarded=ADMIN).status_code == 302


@pytest.mark.parametrize("typed", ["ROOT", "Root", "r00t", "ro\u043et", "root_"])
def test_failures_for_an_unknown_name_do_not_lock_the_real_account(
    client, admin_user, typed
):
    for n in range(5):
        sign_in(client, typed, "wrong", forwarded=f"192.0.2.{n}")
    assert sign_in(client, "root", "pw-12345678", forwarded=ADMIN).status_code == 302


def test_an_unknown_name_locks_like_an_account_so_the_lock_names_no_one(
    client, admin_user
):
    for _ in range(5):
        sign_in(client, "nobody", "wrong", forwarded=ATTACKER)
        sign_in(client, "root", "wrong", forwarded=ADMIN)
    unknown = page(sign_in(client, "nobody", "wrong", forwarded="192.0.2.1"))
    known = page(sign_in(client, "root", "wrong", forwarded="192.0.2.2"))
    assert "Too many failed sign-ins for this account" in unknown
    assert "Too many failed sign-ins for this account" in known


@pytest.mark.parametrize(
    ("who", "forwarded", "whom"),
    [("root", None, "for this account"), (None, ATTACKER, "from your address")],
)
def test_the_lock_message_says_when_it_ends(client, admin_user, who, forwarded, whom):
    for n in range(20):
        sign_in(client, who or f"guess{n}", "wrong", forwarded=forwarded or ATTACKER)
    response = sign_in(client, "root", "pw-12345678", forwarded=forwarded or ADMIN)
    assert f"Too many failed sign-ins {whom}. Wait 14 min (until 08:15 UTC)" in page(
        response
    )


def test_the_admin_login_page_reads_the_client_address_the_same_way(client, admin_user):
    for n in range(20):
        sign_in(client, f"guess{n}", "wrong", forwarded=ATTACKER, path="/admin/login/")
    response = sign_in(
        client, "root", "pw-12345678", forwarded=ADMIN, path="/admin/login/"
    )
    assert response.status_code == 302


def test_unknown_bearer_keys_are_counted_per_client_behind_the_proxy(api, monkeypatch):
    monkeypatch.setattr(ratelimit, "UNKNOWN_KEY_DELAY_S", 0)
    api.credentials(HTTP_AUTHORIZATION="Bearer qv_abcdefghij_" + "x" * 32)
    for _ in range(30):
        api.get("/api/v1/tools/", REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=ATTACKER)
    late = api.get("/api/v1/tools/", REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=ATTACKER)
    other = api.get("/api/v1/tools/", REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=ADMIN)
    assert (late.status_code, other.status_code) == (429, 401)


# The client address ---------------------------------------------------------------


def address(peer: str, forwarded: str | None = None) -> str:
    request = RequestFactory().get("/", REMOTE_ADDR=peer)
    if forwarded is not None:
        request.META["HTTP_X_FORWARDED_FOR"] = forwarded
    return client_address(request)


@pytest.mark.parametrize(
    ("peer", "forwarded", "expected"),
    [
        (ATTACKER, None, f"{ATTACKER}/32"),
        (ATTACKER, ADMIN, f"{ATTACKER}/32"),  # untrusted peer: header ignored
        (PROXY, None, f"{PROXY}/32"),  # the proxy sent no header
        (PROXY, ADMIN, f"{ADMIN}/32"),
        (PROXY, f"{ADMIN}, 10.0.0.7", f"{ADMIN}/32"),  # two trusted hops
        (PROXY, f"1.1.1.1, {ADMIN}", f"{ADMIN}/32"),  # rightmost untrusted hop
        (PROXY, "not-an-address", f"{PROXY}/32"),
        (PROXY, f"{ADMIN}, garbage", f"{PROXY}/32"),
        (PROXY, "10.0.0.7, 10.0.0.8", "10.0.0.7/32"),  # all trusted: the first
        ("2001:db8:1:2::5", None, "2001:db8:1:2::/64"),
        (PROXY, "2001:db8:1:2:aaaa::9", "2001:db8:1:2::/64"),
        ("::ffff:203.0.113.66", None, f"{ATTACKER}/32"),
    ],
)
def test_the_client_address_is_read_from_trusted_proxies_only(
    peer, forwarded, expected
):
    assert address(peer, forwarded) == expected


def test_without_trusted_proxies_the_peer_is_always_the_client(settings):
    settings.QUIVER_TRUSTED_PROXIES = ()
    assert address(PROXY, ADMIN) == f"{PROXY}/32"


def test_trusted_proxies_are_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("QUIVER_TRUSTED_PROXIES", "10.0.0.5, 172.16.0.0/12, ::1")
    assert [str(n) for n in env_networks("QUIVER_TRUSTED_PROXIES")] == [
        "10.0.0.5/32",
        "172.16.0.0/12",
        "::1/128",
    ]
    monkeypatch.setenv("QUIVER_TRUSTED_PROXIES", "10.0.0.5, proxy.local")
    with pytest.raises(ImproperlyConfigured, match="QUIVER_TRUSTED_PROXIES"):
        env_networks("QUIVER_TRUSTED_PROXIES")


def test_the_setting_defaults_to_no_trusted_proxy():
    assert isinstance(settings.QUIVER_TRUSTED_PROXIES, tuple)
