"""Every API error is a 4xx JSON body naming the field and the rule."""

from __future__ import annotations

import re

import pytest

from catalog.models import Tool

pytestmark = pytest.mark.django_db


def test_an_oversize_body_gets_413_before_any_work(with_key, settings):
    settings.QUIVER_MAX_BODY_BYTES = 2048
    client = with_key("curator")
    body = {"name": "big", "description": "x" * 5000}
    response = client.post("/api/v1/tools/", body, format="json")
    assert response.status_code == 413
    assert response.json()["error"] == "payload_too_large"
    assert "body" in response.json()["detail"]
    assert not Tool.objects.exists()


def test_malformed_json_is_a_400_with_json(with_key):
    client = with_key("curator")
    response = client.generic(
        "POST", "/api/v1/tools/", "{not json", content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["error"] == "parse_error"


def test_an_unknown_catalog_is_a_404_naming_it(with_key):
    response = with_key("agent").get("/api/v1/catalogs/nope/export?format=openai")
    assert response.status_code == 404
    assert response.json()["detail"] == "catalog: no catalog 'nope'"


def test_a_bad_export_format_names_the_field(with_key):
    response = with_key("agent").get("/api/v1/catalogs/default/export?format=xml")
    assert response.status_code == 400
    assert "format" in response.json()["fields"]


def test_the_api_schema_and_docs_need_a_login(client):
    assert client.get("/api/schema/").status_code in (401, 403)


def test_the_docs_page_is_served_without_a_cdn(client, admin_user):
    client.force_login(admin_user)
    page = client.get("/api/docs/").content.decode()
    assert "swagger-ui" in page
    # Every script, style sheet and image comes from this server: no address with
    # a host of its own (a CSRF token may happen to spell "cdn", so no substring).
    loaded = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']""", page)
    assert loaded
    assert not [url for url in loaded if re.match(r"(?:[a-z][a-z0-9+.-]*:)?//", url)]


def test_the_detail_names_the_field_once_when_the_message_already_does(with_key):
    response = with_key("agent").post("/api/v1/select", {"query": " "}, format="json")
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert detail.startswith("query: ") and not detail.startswith("query: query:")
