"""The 403 and 404 pages keep the navigation the signed-in person has, and the
sign-in page speaks to everyone who signs in."""

from __future__ import annotations

import pytest

from tests.factories import make_user

pytestmark = pytest.mark.django_db


def nav(page: str) -> str:
    return page.split('<nav class="mainnav"')[1].split("</nav>")[0]


def test_a_curator_refused_the_audit_log_keeps_their_navigation(as_curator):
    response = as_curator.get("/audit/")
    assert response.status_code == 403
    links = nav(response.content.decode())
    assert 'href="/import/"' in links  # what a curator may do
    assert 'href="/keys/"' not in links  # and nothing more
    assert 'href="/audit/"' not in links


def test_an_admin_on_a_missing_page_keeps_the_admin_navigation(client):
    client.force_login(make_user("root", superuser=True))
    response = client.get("/tools/999999/")
    assert response.status_code == 404
    links = nav(response.content.decode())
    for href in ("/import/", "/audit/", "/keys/", "/people/", "/api/docs/"):
        assert f'href="{href}"' in links
    assert "This page does not exist" in response.content.decode()


def test_a_compliance_reader_on_a_missing_page_keeps_the_audit_links(as_compliance):
    response = as_compliance.get("/no-such-page/")
    assert response.status_code == 404
    links = nav(response.content.decode())
    assert 'href="/audit/"' in links
    assert 'href="/import/"' not in links


def test_a_stranger_on_a_missing_page_gets_no_navigation(client):
    response = client.get("/no-such-page/")
    assert response.status_code == 404
    assert '<nav class="mainnav"' not in response.content.decode()


def test_the_sign_in_page_speaks_to_everyone_who_signs_in(client):
    text = client.get("/login/").content.decode()
    assert "The curators' console" not in text
    for who in ("curators", "compliance", "approvers", "admins"):
        assert who in text
