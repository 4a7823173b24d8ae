"""NUL and lone surrogates (text Postgres cannot store) are a 400 naming the field,
in any API body or query parameter, and nothing is written."""

from __future__ import annotations

import io

import pytest

from audit.models import AuditEvent
from catalog.models import Tool
from jobs.models import Job
from tests.factories import make_tool

pytestmark = pytest.mark.django_db

RULE = "must not contain NUL or unpaired surrogate characters"


def post_text(client, url, text, method="POST"):
    return client.generic(method, url, text, content_type="application/json")


def assert_refused(response, field):
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["error"] == "invalid"
    assert body["detail"] == f"{field}: {RULE}"
    return body


def counts():
    return (Tool.objects.count(), Job.objects.count(), AuditEvent.objects.count())


@pytest.fixture
def curator_api(with_key):
    make_tool(name="get_weather")
    return with_key("curator")


@pytest.mark.parametrize(
    ("url", "text", "field"),
    [
        ("/api/v1/select", '{"query": "a\\u0000b"}', "query"),
        ("/api/v1/select", '{"query": "\\ud800"}', "query"),
        ("/api/v1/select", '{"query": "x", "roles": ["\\udfff"]}', "roles[0]"),
        ("/api/v1/select/batch",
         '{"requests": [{"query": "ok"}, {"query": "\\u0000"}]}', "requests[1].query"),
        ("/api/v1/validate",
         '{"tool": "get_weather", "arguments": {"city": "\\u0000"}}', "arguments.city"),
        ("/api/v1/validate", '{"tool": "get_weather", "arguments": {"\\u0000": 1}}',
         "arguments.\\u0000"),
        ("/api/v1/tools/", '{"name": "n\\u0000"}', "name"),
        ("/api/v1/tools/", '{"name": "t", "parameters": {"type": "object",'
         ' "properties": {"\\ud800": {}}}}', "parameters.properties.\\ud800"),
        ("/api/v1/catalogs/default/import", '{"tools": [{"name": "\\u0000"}]}',
         "tools[0].name"),
    ],
)  # fmt: skip
def test_bad_text_in_a_body_is_a_400_that_writes_nothing(curator_api, url, text, field):
    before = counts()
    assert_refused(post_text(curator_api, url, text), field)
    assert counts() == before


def test_bad_text_in_a_tool_update_is_refused(curator_api):
    tool = Tool.objects.get(name="get_weather")
    url = f"/api/v1/tools/{tool.pk}/"
    before = counts()
    assert_refused(
        post_text(curator_api, url, '{"description": "\\u0000"}', "PATCH"),
        "description",
    )
    assert counts() == before
    tool.refresh_from_db()
    assert tool.version == 1


def test_bad_text_in_selection_settings_is_refused(curator_api):
    url = "/api/v1/catalogs/default/selection-settings"
    response = post_text(curator_api, url, '{"settings": {"a\\u0000": 1}}', "PUT")
    assert_refused(response, "settings.a\\u0000")


def test_bad_text_in_a_form_encoded_body_is_refused(curator_api):
    before = counts()
    response = curator_api.post("/api/v1/select", {"query": "a\x00b"})
    assert_refused(response, "query")
    assert counts() == before


def test_bad_text_in_an_uploaded_import_file_is_refused(curator_api):
    upload = io.BytesIO(b'{"tools": [{"name": "\\u0000"}]}')
    upload.name = "tools.json"
    response = curator_api.post(
        "/api/v1/catalogs/default/import", {"file": upload}, format="multipart"
    )
    assert_refused(response, "file.tools[0].name")
    assert not Job.objects.exists()


@pytest.mark.parametrize(
    ("url", "field"),
    [
        ("/api/v1/tools/?q=%00", "q"),
        ("/api/v1/tools/?tag=a%00", "tag"),
        ("/api/v1/tools/?catalog=default&%00=1", "\\u0000"),
        ("/api/v1/catalogs/default/export?format=openai%00", "format"),
        ("/api/v1/catalogs/a%00b/", "path"),
    ],
)
def test_bad_text_in_a_url_is_a_400_json(curator_api, url, field):
    assert_refused(curator_api.get(url), field)


def test_bad_text_in_a_console_url_is_a_plain_400(as_member):
    response = as_member.get("/tools/?q=%00")
    assert response.status_code == 400


def test_a_validate_argument_string_with_an_escaped_nul_is_an_invalid_call(
    curator_api,
):
    body = '{"tool": "get_weather", "arguments": "{\\"city\\": \\"\\\\u0000\\"}"}'
    before = counts()
    response = post_text(curator_api, "/api/v1/validate", body)
    assert response.status_code == 200, response.content
    answer = response.json()
    assert answer["valid"] is False
    assert answer["errors"][0]["rule"] == "text"
    assert RULE in answer["errors"][0]["message"]
    assert counts()[:2] == before[:2]
