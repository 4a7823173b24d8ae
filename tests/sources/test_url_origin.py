"""A changed URL never carries the old secret: a source's header values belong to
the origin (scheme, host, port) they were saved for. Changing the URL's origin
drops them unless the same change sets them again (a masked value does not), on
every path (API, console, the service), with a ``source_changed`` event naming the
dropped headers and never their values; a URL changed around the services finds
its headers refused, not sent. The same origin keeps them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib import admin

from audit.models import AuditEvent
from sources.models import Source
from sources.secrets import (
    MASK,
    HeadersForAnotherOrigin,
    HeadersUnreadable,
    decrypt_headers,
    encrypt_headers,
    origin,
)
from sources.services import update_source
from sources.upstream import check_connection
from tests.sources.conftest import SECRET, sync
from tests.upstream import Upstream, running_upstream

pytestmark = pytest.mark.django_db
TOKEN = "sk-upstream-7f3a9c1e5d"


@pytest.fixture
def elsewhere() -> Iterator[Upstream]:
    """A second server: the same host, another port, so another origin."""
    with running_upstream() as server:
        yield server


@pytest.fixture
def source(make_source: Any, upstream: Upstream) -> Source:
    return make_source(upstream.url, headers={"Authorization": SECRET})


def sent_secret(server: Upstream) -> bool:
    return any(TOKEN in json.dumps(h) for h in server.seen_headers)


def last_update() -> AuditEvent:
    return AuditEvent.objects.filter(
        event_type="source_changed", input__action="update"
    ).latest("id")


def no_secret_in_audit() -> bool:
    rows = AuditEvent.objects.values_list("summary", "input", "output")
    return TOKEN not in json.dumps(list(rows))


def test_a_patch_of_the_url_alone_drops_the_headers_for_the_new_origin(
    admin_api, source, elsewhere
):
    answer = admin_api.patch(
        f"/api/v1/sources/{source.pk}", {"url": elsewhere.url}, format="json"
    )

    assert answer.status_code == 200, answer.json()
    assert answer.json()["headers"] == {}
    assert "Authorization" in answer.json()["warning"]
    source.refresh_from_db()
    assert decrypt_headers(source) == {}
    sync(source)
    check_connection(source)
    assert elsewhere.list_requests and not sent_secret(elsewhere)
    event = last_update()
    assert event.input["headers_dropped"] == ["Authorization"]
    assert event.input["changed"] == ["headers", "url"]
    assert "Authorization dropped" in event.summary and no_secret_in_audit()


def test_sending_the_masked_value_back_is_not_setting_it_again(
    admin_api, source, elsewhere
):
    answer = admin_api.patch(
        f"/api/v1/sources/{source.pk}",
        {"url": elsewhere.url, "headers": {"Authorization": MASK}},
        format="json",
    )

    assert answer.status_code == 200 and answer.json()["headers"] == {}
    sync(Source.objects.get(pk=source.pk))
    assert not sent_secret(elsewhere)
    assert last_update().input["headers_dropped"] == ["Authorization"]


def test_headers_set_again_in_the_same_change_go_to_the_new_origin(
    admin_api, make_source, upstream, elsewhere
):
    source = make_source(
        upstream.url, headers={"Authorization": SECRET, "X-Tenant": "acme-42"}
    )
    answer = admin_api.patch(
        f"/api/v1/sources/{source.pk}",
        {
            "url": elsewhere.url,
            "headers": {"X-Tenant": "acme-43", "Authorization": MASK},
        },
        format="json",
    )

    assert answer.status_code == 200
    assert answer.json()["headers"] == {"X-Tenant": MASK}
    sync(Source.objects.get(pk=source.pk))
    assert any(h.get("x-tenant") == "acme-43" for h in elsewhere.seen_headers)
    assert not sent_secret(elsewhere)
    assert last_update().input["headers_dropped"] == ["Authorization"]


@pytest.mark.parametrize(
    "new_url",
    [
        "{scheme}s://{host}:{port}/mcp",  # scheme
        "{scheme}://localhost:{port}/mcp",  # host (the same machine)
        "{scheme}://{host}:{other}/mcp",  # port
        "{scheme}://{host}/mcp",  # the default port
        "{scheme}://127.0.0.2:{port}/mcp",
        "{scheme}://[::1]:{port}/mcp",
    ],
)
def test_every_part_of_the_origin_counts(source, admin_user, new_url):
    scheme, rest = source.url.split("://")
    host, port = rest.split("/")[0].split(":")
    url = new_url.format(scheme=scheme, host=host, port=port, other=int(port) + 1)

    updated = update_source(source, {"url": url}, actor=admin_user)

    assert updated.headers_dropped == ["Authorization"]
    assert decrypt_headers(updated.source) == {}


@pytest.mark.parametrize(
    "new_url",
    [
        "{scheme}://{host}:{port}/mcp/",  # another path
        "{scheme}://{host}:{port}/mcp?tenant=1",
        "HTTP://{host}:{port}/mcp",  # the scheme's case
    ],
)
def test_the_same_origin_keeps_the_headers(source, admin_user, upstream, new_url):
    scheme, rest = source.url.split("://")
    host, port = rest.split("/")[0].split(":")
    url = new_url.format(scheme=scheme, host=host, port=port)

    updated = update_source(source, {"url": url}, actor=admin_user)

    assert updated.headers_dropped == []
    assert decrypt_headers(updated.source) == {"Authorization": SECRET}
    assert "headers_dropped" not in last_update().input


def test_origins_compare_scheme_host_and_port_with_defaults_filled_in():
    assert origin("http://Example.COM/mcp") == "http://example.com:80"
    assert origin("https://example.com:443/x") == origin("https://example.com/y")
    assert origin("http://example.com:443/") != origin("https://example.com/")
    assert origin("http://[::1]:8080/") == "http://[::1]:8080"
    assert origin("not a url") == "" and origin("http://[::1/") == ""


def test_the_console_drops_them_and_says_so(
    client, admin_user, source, elsewhere, upstream
):
    client.force_login(admin_user)
    answer = client.post(
        f"/sources/{source.pk}/",
        {
            "url": elsewhere.url,
            "headers": f"Authorization: {MASK}",
            "timeout_seconds": "12",
        },
        follow=True,
    )

    page = answer.content.decode()
    assert answer.status_code == 200 and "Authorization were dropped" in page
    source.refresh_from_db()
    assert decrypt_headers(source) == {} and source.url == elsewhere.url
    assert last_update().input["headers_dropped"] == ["Authorization"]
    sync(source)
    assert not sent_secret(elsewhere) and no_secret_in_audit()


def test_a_url_changed_around_the_services_gets_no_headers(source, elsewhere):
    # A shell, a migration or a future admin page writing the row directly.
    Source.objects.filter(pk=source.pk).update(url=elsewhere.url)
    source.refresh_from_db()

    with pytest.raises(HeadersForAnotherOrigin):
        decrypt_headers(source)
    job = sync(source)
    tested = check_connection(source)

    assert job.state == "failed" and "another origin" in source.last_error
    assert tested["ok"] is False and "another origin" in tested["reason"]
    assert not elsewhere.seen_headers


def test_the_django_admin_has_no_page_that_edits_a_source():
    # Every write goes through sources.services (the rule above, the audit event).
    assert Source not in admin.site._registry


def test_headers_saved_before_the_binding_are_dropped_by_a_new_origin_too(
    source, admin_user, elsewhere, upstream
):
    unbound = encrypt_headers({"Authorization": SECRET})  # no origin in the text
    Source.objects.filter(pk=source.pk).update(headers_encrypted=unbound)
    source.refresh_from_db()
    assert decrypt_headers(source) == {"Authorization": SECRET}

    updated = update_source(source, {"url": elsewhere.url}, actor=admin_user)

    assert updated.headers_dropped == ["Authorization"]
    assert decrypt_headers(updated.source) == {}


def test_unreadable_headers_are_dropped_by_a_new_origin_and_kept_otherwise(
    settings, source, admin_user, elsewhere, upstream
):
    stored = source.headers_encrypted
    settings.QUIVER_SOURCE_KEY = "another-key-material-0123456789"
    with pytest.raises(HeadersUnreadable):
        decrypt_headers(source)

    kept = update_source(source, {"timeout_seconds": 9}, actor=admin_user)
    assert kept.source.headers_encrypted == stored  # an old key may come back

    moved = update_source(source, {"url": elsewhere.url}, actor=admin_user)
    assert moved.headers_dropped == ["(unreadable headers)"]
    assert moved.source.headers_encrypted == ""


def test_unreadable_headers_can_be_entered_again(settings, admin_api, source, upstream):
    settings.QUIVER_SOURCE_KEY = "another-key-material-0123456789"
    answer = admin_api.patch(
        f"/api/v1/sources/{source.pk}",
        {"headers": {"Authorization": "Bearer fresh-token-1"}},
        format="json",
    )
    assert answer.status_code == 200, answer.content
    source.refresh_from_db()
    assert decrypt_headers(source) == {"Authorization": "Bearer fresh-token-1"}
