"""Sources never reach a cloud metadata address: not on save, not on connect
(the name is resolved once and the connection made to the checked address, so
DNS rebinding cannot slip through), not after a redirect off the origin; private
addresses are allowed."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest

from sources import netguard
from sources.models import Source
from sources.upstream import UpstreamError, check_connection, list_tools
from tests.sources.conftest import SECRET, sync

pytestmark = pytest.mark.django_db
SOURCES = "/api/v1/catalogs/default/sources"


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://169.254.1.1/mcp",
        "http://[fd00:ec2::254]/mcp",
        "http://[::ffff:169.254.169.254]/mcp",
        "http://[::ffff:a9fe:a9fe]/mcp",
        "http://[64:ff9b::a9fe:a9fe]/mcp",
        "http://[fe80::1]/mcp",
        "http://100.100.100.200/mcp",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://METADATA.google.internal./mcp",
        "http://2852039166/mcp",  # 169.254.169.254 as one number
        "http://0xa9fea9fe/mcp",
    ],
)
def test_metadata_addresses_are_refused_on_save(admin_api, url):
    answer = admin_api.post(SOURCES, {"name": "meta", "url": url}, format="json")
    assert answer.status_code == 400, answer.json()
    assert "denied address" in answer.json()["fields"]["url"][0]
    assert not Source.objects.exists()


@pytest.mark.parametrize(
    "url",
    ["http://10.0.0.5:8080/mcp", "http://192.168.1.20/mcp", "http://172.16.0.1/mcp"],
)
def test_private_addresses_are_allowed(admin_api, url):
    answer = admin_api.post(SOURCES, {"name": "internal", "url": url}, format="json")
    assert answer.status_code == 201, answer.json()


def test_the_deny_list_can_be_extended(admin_api, settings):
    settings.QUIVER_SOURCE_DENY = ["10.9.0.0/16", "vault.internal"]
    for url in ("http://10.9.1.1/mcp", "http://vault.internal/mcp"):
        answer = admin_api.post(SOURCES, {"name": "x", "url": url}, format="json")
        assert answer.status_code == 400


def test_a_hostname_resolving_to_the_metadata_address_is_refused_on_save(
    admin_api, monkeypatch
):
    monkeypatch.setattr(netguard, "resolve", lambda host, port: ["169.254.169.254"])
    answer = admin_api.post(
        SOURCES, {"name": "sneaky", "url": "http://mcp.example.test/mcp"}, format="json"
    )
    assert answer.status_code == 400
    assert "resolves to 169.254.169.254" in answer.json()["fields"]["url"][0]


def test_a_name_that_rebinds_to_the_metadata_address_after_save_never_connects(
    make_source, upstream, monkeypatch
):
    answers = iter([["127.0.0.1"], ["::ffff:169.254.169.254"]])
    monkeypatch.setattr(netguard, "resolve", lambda host, port: next(answers))
    port = upstream.url.split(":")[2].split("/")[0]
    source = make_source(f"http://rebind.example.test:{port}/mcp")  # checked: 127.0.0.1

    job = sync(source)  # connect: now resolves to the metadata address

    assert job.state == "failed" and source.status == "error"
    assert "denied address" in source.last_error
    assert upstream.list_requests == 0 and not upstream.seen_headers


def test_the_connection_goes_to_the_address_that_was_checked(
    make_source, upstream, monkeypatch
):
    port = upstream.url.split(":")[2].split("/")[0]
    monkeypatch.setattr(netguard, "resolve", lambda host, port: ["127.0.0.1"])
    source = make_source(f"http://only-in-our-resolver.test:{port}/mcp")
    assert len(list_tools(source).tools) == 7


class _Redirect(http.server.BaseHTTPRequestHandler):
    target = ""

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.send_response(307)
        self.send_header("Location", self.target)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST  # noqa: N815

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def redirector(upstream) -> Iterator[str]:
    """A server on another origin whose every answer redirects to the upstream."""
    handler = type("Redirect", (_Redirect,), {"target": upstream.url})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()
        server.server_close()


def test_a_redirect_off_the_origin_is_not_followed(make_source, upstream, redirector):
    source = make_source(redirector, headers={"Authorization": SECRET})

    with pytest.raises(UpstreamError):
        list_tools(source)
    assert check_connection(source)["ok"] is False
    assert upstream.list_requests == 0
    assert not any("authorization" in h for h in upstream.seen_headers)
