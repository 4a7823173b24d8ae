"""The metadata deny-list sees through every IPv6 form that carries an IPv4 address:
mapped, SIIT, IPv4-compatible, NAT64 (well-known and local-use at each RFC 6052
prefix length), 6to4, Teredo (server, and the client as the bitwise NOT of the last
32 bits) and ISATAP; each embedded IPv4 address is judged like the IPv4 address
itself, on save and on every connection. The embeddings here are built from the
RFCs, independently of ``sources.netguard``."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

import pytest
from django.test import override_settings
from hypothesis import given, settings
from hypothesis import strategies as st

from sources import netguard
from sources.models import Source
from tests.sources.conftest import sync

SOURCES = "/api/v1/catalogs/default/sources"
METADATA = ipaddress.IPv4Address("169.254.169.254")
FAST = settings(max_examples=200, deadline=None)

Embed = Callable[[ipaddress.IPv4Address, int], ipaddress.IPv6Address]


def v6(value: int) -> ipaddress.IPv6Address:
    return ipaddress.IPv6Address(value % 2**128)


def rfc6052(prefix: bytes, length: int, v4: ipaddress.IPv4Address) -> bytes:
    """RFC 6052, section 2.2: the IPv4 octets follow a prefix of ``length`` bits,
    octet 8 (bits 64-71, "u") staying zero; the suffix is zero."""
    octets = bytearray(16)
    octets[: length // 8] = prefix[: length // 8]
    free = [i for i in range(length // 8, 16) if i != 8]
    for index, octet in zip(free, v4.packed, strict=False):
        octets[index] = octet
    return bytes(octets)


def nat64_local(length: int) -> Embed:
    def embed(v4: ipaddress.IPv4Address, noise: int) -> ipaddress.IPv6Address:
        # The local-use /48, then an operator's own bits up to its prefix length.
        prefix = bytes.fromhex("0064ff9b0001") + noise.to_bytes(16, "big")[:10]
        return ipaddress.IPv6Address(rfc6052(prefix, length, v4))

    return embed


def teredo(v4: ipaddress.IPv4Address, noise: int) -> ipaddress.IPv6Address:
    """2001:0::/32, the server's IPv4, flags and port, then NOT(client IPv4)."""
    server = int(ipaddress.IPv4Address("192.0.2.45"))
    flags_port = noise & 0xFFFFFFFF
    client = ~int(v4) & 0xFFFFFFFF
    return v6(0x20010000 << 96 | server << 64 | flags_port << 32 | client)


def teredo_server(v4: ipaddress.IPv4Address, noise: int) -> ipaddress.IPv6Address:
    return v6(0x20010000 << 96 | int(v4) << 64 | (noise & 0xFFFFFFFF))


EMBEDDINGS: dict[str, Embed] = {
    "mapped ::ffff:a.b.c.d": lambda v4, _n: v6(0xFFFF << 32 | int(v4)),
    "SIIT ::ffff:0:a.b.c.d": lambda v4, _n: v6(0xFFFF << 48 | int(v4)),
    "compatible ::a.b.c.d": lambda v4, _n: v6(int(v4)),
    "NAT64 64:ff9b::/96": lambda v4, _n: v6(0x0064FF9B << 96 | int(v4)),
    **{f"NAT64 local-use /{n}": nat64_local(n) for n in (48, 56, 64, 96)},
    "6to4 2002::/16": lambda v4, n: v6(0x2002 << 112 | int(v4) << 80 | n % 2**80),
    "Teredo client": teredo,
    "Teredo server": teredo_server,
    "ISATAP 0:5efe": lambda v4, n: v6((n % 2**64) << 64 | 0x5EFE << 32 | int(v4)),
    "ISATAP 200:5efe": lambda v4, n: v6((n % 2**64) << 64 | 0x02005EFE << 32 | int(v4)),
}
LINK_LOCAL = st.integers(0, 2**16 - 1).map(
    lambda low: ipaddress.IPv4Address(0xA9FE0000 | low)
)
DENIED_IPV4 = LINK_LOCAL | st.just(ipaddress.IPv4Address("100.100.100.200"))
NOISE = st.integers(0, 2**128 - 1)
# Global unicast IPv4 addresses outside every denied network.
ALLOWED_IPV4 = st.sampled_from(["10.0.0.5", "192.168.1.20", "8.8.8.8"]).map(
    ipaddress.IPv4Address
)


@pytest.mark.parametrize("form", sorted(EMBEDDINGS))
@FAST
@given(v4=DENIED_IPV4, noise=NOISE)
def test_every_ipv6_form_of_a_denied_ipv4_address_is_denied(form, v4, noise):
    address = EMBEDDINGS[form](v4, noise)
    assert v4 in netguard.embedded_ipv4s(address), (form, address)
    assert netguard.address_denied(address), (form, address)
    assert netguard.host_denied(f"[{address}]")
    assert "denied address" in netguard.url_problem(f"http://[{address}]:8080/mcp")


@pytest.mark.parametrize("form", sorted(EMBEDDINGS))
@settings(max_examples=50, deadline=None)
@given(v4=ALLOWED_IPV4)
def test_an_ipv6_form_of_an_allowed_ipv4_address_stays_allowed(form, v4):
    # Zero noise: nothing but the embedded address could be judged.
    address = EMBEDDINGS[form](v4, 0)
    assert not netguard.address_denied(address), (form, address)


@pytest.mark.parametrize("form", sorted(EMBEDDINGS))
@settings(max_examples=50, deadline=None)
@given(low=st.integers(0, 255), noise=NOISE)
def test_the_added_deny_networks_see_through_every_form_too(form, low, noise):
    v4 = ipaddress.IPv4Address(f"10.9.1.{low}")
    with override_settings(QUIVER_SOURCE_DENY=["10.9.0.0/16"]):
        assert netguard.address_denied(EMBEDDINGS[form](v4, noise)), form


@pytest.mark.parametrize(
    "url",
    [
        "http://[64:ff9b:1::a9fe:a9fe]/mcp",  # NAT64 local-use, /96
        "http://[64:ff9b:1:a9fe:a9:fe00::]/mcp",  # NAT64 local-use, /48
        "http://[::169.254.169.254]/mcp",  # IPv4-compatible
        "http://[::a9fe:a9fe]/mcp",
        "http://[::ffff:0:169.254.169.254]/mcp",  # SIIT
        "http://[2002:a9fe:a9fe::1]/mcp",  # 6to4
        "http://[2001:0:4136:e378:8000:63bf:5601:5601]/mcp",  # Teredo client
        "http://[2001:db8::5efe:169.254.169.254]/mcp",  # ISATAP
        "http://[2001:db8::200:5efe:a9fe:a9fe]/mcp",
        "http://[::ffff:0:6464:64c8]/mcp",  # SIIT of Alibaba's 100.100.100.200
    ],
)
@pytest.mark.django_db
def test_each_form_from_the_issue_is_refused_on_save(admin_api, url):
    answer = admin_api.post(SOURCES, {"name": "meta", "url": url}, format="json")
    assert answer.status_code == 400, answer.json()
    assert "denied address" in answer.json()["fields"]["url"][0]
    assert not Source.objects.exists()


@pytest.mark.parametrize("form", sorted(EMBEDDINGS))
@pytest.mark.django_db
def test_a_name_resolving_to_any_form_never_connects(
    form, make_source, upstream, monkeypatch
):
    resolved = iter([["127.0.0.1"], [str(EMBEDDINGS[form](METADATA, 0))]])
    monkeypatch.setattr(netguard, "resolve", lambda host, port: next(resolved))
    port = upstream.url.split(":")[2].split("/")[0]
    source = make_source(f"http://rebind.example.test:{port}/mcp")

    job = sync(source)

    assert job.state == "failed" and "denied address" in source.last_error
    assert upstream.list_requests == 0 and not upstream.seen_headers
