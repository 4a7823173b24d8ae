"""The API docs page has the console's navigation, and every endpoint of the
schema a description of what it does."""

from __future__ import annotations

import pytest
from drf_spectacular.generators import SchemaGenerator

from tests.factories import make_user


def operations() -> list[tuple[str, str, dict]]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return [
        (method.upper(), path, op)
        for path, ops in schema["paths"].items()
        for method, op in ops.items()
    ]


def test_the_schema_has_the_endpoints_of_every_api_app():
    paths = {path for _method, path, _op in operations()}
    for path in ("/api/v1/select", "/api/v1/tools/", "/api/v1/audit/"):
        assert path in paths
    assert "/api/v1/catalogs/{slug}/import/" in paths


def test_every_endpoint_has_a_description():
    undescribed = [
        f"{method} {path}"
        for method, path, op in operations()
        if len((op.get("description") or "").strip()) < 10
    ]
    assert undescribed == []


def test_the_import_documents_its_dry_run():
    [op] = [
        op
        for method, path, op in operations()
        if (method, path) == ("POST", "/api/v1/catalogs/{slug}/import/")
    ]
    assert "dry_run" in {p["name"] for p in op["parameters"]}
    assert "dry_run" in op["description"]


@pytest.mark.django_db
def test_the_api_docs_page_has_the_consoles_navigation(client):
    client.force_login(make_user("root", superuser=True))
    response = client.get("/api/docs/")
    assert response.status_code == 200
    page = response.content.decode()
    links = page.split('<nav class="mainnav"')[1].split("</nav>")[0]
    for href in ("/tools/", "/import/", "/audit/", "/keys/", "/api/docs/"):
        assert f'href="{href}"' in links
    assert "swagger-ui" in page
    assert "css/quiver.css" in page
    assert "<script>" not in page  # the CSP still holds: no inline script


@pytest.mark.django_db
def test_the_api_docs_page_shows_a_member_only_their_links(as_member):
    page = as_member.get("/api/docs/").content.decode()
    links = page.split('<nav class="mainnav"')[1].split("</nav>")[0]
    assert 'href="/tools/"' in links
    assert 'href="/keys/"' not in links
    assert 'href="/import/"' not in links
