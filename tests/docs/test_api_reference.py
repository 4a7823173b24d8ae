"""The API reference links every operation the app's OpenAPI schema declares.

The operations come from the schema drf-spectacular generates (the one the app
serves at /api/schema/), so a new endpoint without a line in
docs/reference/api.md fails here, and so does a link to an operation that is gone."""

from __future__ import annotations

import re

from drf_spectacular.generators import SchemaGenerator

from tests.docs.env_reads import ROOT

REFERENCE = ROOT / "docs" / "reference" / "api.md"
SWAGGER = "http://127.0.0.1:8000/api/docs/#/"


def schema_operations() -> dict[str, str]:
    """Swagger UI's deep link (tag/operationId) -> 'METHOD path'."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return {
        f"{op['tags'][0]}/{op['operationId']}": f"{method.upper()} {path}"
        for path, ops in schema["paths"].items()
        for method, op in ops.items()
    }


def linked_operations() -> set[str]:
    return set(
        re.findall(re.escape(SWAGGER) + r"([\w-]+/\w+)\)", REFERENCE.read_text())
    )


def test_every_operation_of_the_schema_is_linked_from_the_api_reference():
    missing = sorted(
        where
        for link, where in schema_operations().items()
        if link not in linked_operations()
    )
    assert not missing, f"document in {REFERENCE.relative_to(ROOT)}: {missing}"


def test_every_link_of_the_api_reference_opens_an_operation_that_exists():
    stale = sorted(linked_operations() - schema_operations().keys())
    assert not stale, f"no such operation in /api/schema/: {stale}"


def test_the_links_open_the_swagger_page_that_config_urls_serves():
    from django.urls import reverse

    assert SWAGGER.removeprefix("http://127.0.0.1:8000").startswith(
        reverse("api-docs") + "#/"
    )
    assert len(linked_operations()) > 50
