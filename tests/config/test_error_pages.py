"""Error pages: styled for people with a way back; the JSON envelope under /api/."""

from __future__ import annotations

import pytest
from django.test import Client


@pytest.fixture
def failing(settings):
    settings.ROOT_URLCONF = "tests.config.boom_urls"
    settings.DEBUG = False
    return Client(raise_request_exception=False)


@pytest.mark.django_db
def test_a_missing_page_is_the_styled_404_with_a_way_back(client):
    response = client.get("/no-such-page/")
    assert response.status_code == 404
    html = response.content.decode()
    assert 'data-testid="error-page"' in html
    assert "This page does not exist" in html
    assert 'href="/"' in html
    assert "css/quiver.css" in html


@pytest.mark.django_db
def test_the_404_never_lists_the_url_patterns_even_signed_in(as_member):
    html = as_member.get("/no-such-page/").content.decode()
    assert "api/v1/" not in html
    assert "URLconf" not in html


@pytest.mark.django_db
def test_an_unknown_api_path_answers_json_404_in_the_error_envelope(client):
    response = client.get("/api/v1/no-such-endpoint/")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "error": "not_found",
        "detail": "path: no API endpoint at /api/v1/no-such-endpoint/",
    }


def test_a_crash_is_the_styled_500_rendered_without_the_database(failing):
    # No django_db mark: any database query while rendering the page would fail.
    response = failing.get("/boom/")
    assert response.status_code == 500
    html = response.content.decode()
    assert "Something went wrong on our side" in html
    assert 'href="/"' in html
    assert "boom" not in html


def test_a_crash_under_the_api_is_json_500_in_the_error_envelope(failing):
    response = failing.get("/api/v1/boom/")
    assert response.status_code == 500
    body = response.json()
    assert body["error"] == "server_error"
    assert "boom" not in body["detail"]
    assert body["retryable"] is False and "Retry-After" not in response


@pytest.mark.django_db
def test_a_page_a_member_may_not_open_is_the_styled_403(as_member):
    response = as_member.get("/tools/new/")
    assert response.status_code == 403
    html = response.content.decode()
    assert "You may not open this page" in html
    assert 'href="/"' in html


@pytest.mark.django_db
def test_the_api_docs_send_an_anonymous_visitor_to_the_login_page(client):
    response = client.get("/api/docs/")
    assert response.status_code == 302
    assert response["Location"] == "/login/?next=/api/docs/"


@pytest.mark.django_db
def test_the_api_docs_load_their_script_from_a_url_not_inline(as_member):
    html = as_member.get("/api/docs/").content.decode()
    assert '<script src="/api/docs/?script=' in html
    assert "<script>" not in html
    assert "<style>" not in html
    script = as_member.get("/api/docs/?script=")
    assert script.status_code == 200
    assert script["Content-Type"].startswith("application/javascript")
