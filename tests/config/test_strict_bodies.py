"""JSON write bodies are read strictly: a field no endpoint takes, and a key given
twice in one object (at any depth), are a 400 naming it; nothing is dropped or
chosen silently."""

from __future__ import annotations

import json
from typing import Any

import pytest

from config.jsonparse import DUPLICATE_KEY_RULE, DuplicateKey, loads_unique
from config.strict import UNKNOWN_FIELD_RULE
from tests.factories import make_tool

pytestmark = pytest.mark.django_db

OPENAI_CALL = {
    "choices": [
        {
            "message": {
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": "{}"},
                    }
                ]
            }
        }
    ]
}
SCHEMA = {"type": "object", "properties": {}}
# Every write body of the API, each valid but for the field it should not have.
WRITE_BODIES: list[tuple[str, str, dict[str, Any]]] = [  # fmt: skip
    ("post", "/api/v1/select", {"query": "weather in Paris"}),
    ("post", "/api/v1/select/batch", {"requests": [{"query": "weather"}]}),
    ("post", "/api/v1/validate", {"tool": "get_weather", "arguments": {}}),
    ("post", "/api/v1/tool-calls/validate", {"output": OPENAI_CALL}),
    ("post", "/api/v1/catalogs/", {"slug": "extra", "name": "Extra"}),
    (
        "post",
        "/api/v1/tools/",
        {"name": "new_tool", "description": "A new tool.", "parameters": SCHEMA},
    ),
    ("patch", "/api/v1/tools/{tool}/", {"description": "Changed."}),
    (
        "put",
        "/api/v1/tools/{tool}/",
        {"name": "get_weather", "description": "d", "parameters": SCHEMA},
    ),
    ("put", "/api/v1/catalogs/default/selection-settings", {"settings": {}}),
    (
        "post",
        "/api/v1/clients/",
        {"name": "new-key", "scope": "agent", "roles": [], "catalogs": ["default"]},
    ),
]


@pytest.fixture
def admin(with_key: Any) -> Any:
    return with_key("admin")


@pytest.fixture
def weather() -> Any:
    return make_tool(name="get_weather")


def send(client: Any, method: str, url: str, body: Any) -> Any:
    return getattr(client, method)(url, body, format="json")


@pytest.mark.parametrize(("method", "url", "body"), WRITE_BODIES)
@pytest.mark.parametrize("unknown", ["colour", "blocktools", "Query", "__class__"])
def test_an_unknown_field_in_any_write_body_is_a_400_naming_it(
    admin: Any, weather: Any, method: str, url: str, body: Any, unknown: str
) -> None:
    url = url.format(tool=weather.pk)
    response = send(admin, method, url, {**body, unknown: True})
    assert response.status_code == 400, response.content
    answer = response.json()
    assert answer["error"] == "invalid"
    assert unknown in answer["fields"]
    assert unknown in answer["detail"]


@pytest.mark.parametrize(("method", "url", "body"), WRITE_BODIES)
def test_each_write_body_without_the_unknown_field_is_accepted(
    admin: Any, weather: Any, method: str, url: str, body: Any
) -> None:
    response = send(admin, method, url.format(tool=weather.pk), body)
    assert response.status_code < 300, response.content


def test_an_unknown_field_in_a_batch_item_is_that_items_error(
    admin: Any, weather: Any
) -> None:
    requests = [{"query": "weather"}, {"query": "weather", "colour": 1}]
    response = send(admin, "post", "/api/v1/select/batch", {"requests": requests})
    assert response.status_code == 200
    second = response.json()["results"][1]
    assert second["error"] == "invalid"
    assert second["fields"] == {"colour": [UNKNOWN_FIELD_RULE]}
    assert second["detail"] == f"requests[1].colour: {UNKNOWN_FIELD_RULE}"


def test_an_unknown_setting_is_a_400_naming_it(admin: Any) -> None:
    body = {"settings": {"colour": 1}}
    response = send(admin, "put", "/api/v1/catalogs/default/selection-settings", body)
    assert response.status_code == 400
    assert "settings.colour" in response.json()["fields"]


def test_an_unknown_import_parameter_is_a_400_naming_it(admin: Any) -> None:
    response = admin.post(
        "/api/v1/catalogs/default/import?format=canonical&colour=1",
        {"tools": []},
        format="json",
    )
    assert response.status_code == 400
    assert "colour" in response.json()["fields"]


def test_an_unknown_export_parameter_is_a_400_naming_it(admin: Any) -> None:
    response = admin.get("/api/v1/catalogs/default/export/?colour=1")
    assert response.status_code == 400
    assert "colour" in response.json()["fields"]


def raw(client: Any, url: str, text: str) -> Any:
    return client.post(url, text, content_type="application/json")


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ('{"query": "a", "query": "b"}', "query"),
        ('{"query": {"city": "Oslo", "city": "Rome"}}', "query.city"),
        ('{"messages": [{"role": "user", "role": "system"}]}', "messages[0].role"),
        ('{"catalog": "default", "tool": "x", "arguments": {"a": {"b": 1, "b": 2}}}',
         "arguments.a.b"),
    ],
)  # fmt: skip
def test_a_duplicate_key_at_any_depth_is_a_400_naming_its_path(
    admin: Any, weather: Any, text: str, path: str
) -> None:
    url = "/api/v1/validate" if "arguments" in text else "/api/v1/select"
    response = raw(admin, url, text)
    assert response.status_code == 400, response.content
    assert response.json()["fields"] == {path: [DUPLICATE_KEY_RULE]}
    assert response.json()["detail"] == f"{path}: {DUPLICATE_KEY_RULE}"


def test_a_duplicate_key_in_a_tool_calls_output_is_refused_before_any_check(
    admin: Any, weather: Any
) -> None:
    text = '{"output": {"role": "assistant", "content": "", "content": "x"}}'
    response = raw(admin, "/api/v1/tool-calls/validate", text)
    assert response.status_code == 400
    assert list(response.json()["fields"]) == ["output.content"]


def test_a_duplicate_key_in_an_uploaded_import_file_is_refused(admin: Any) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile(
        "tools.json", b'{"tools": [], "tools": []}', "application/json"
    )
    response = admin.post(
        "/api/v1/catalogs/default/import", {"file": upload}, format="multipart"
    )
    assert response.status_code == 400
    assert "tools" in response.json()["detail"]


def test_equal_keys_in_different_objects_are_not_duplicates() -> None:
    text = json.dumps({"a": {"k": 1}, "b": [{"k": 2}, {"k": 3}], "k": 4})
    assert loads_unique(text) == json.loads(text)


def test_the_duplicate_named_is_the_repeated_key_even_deep_in_a_list() -> None:
    with pytest.raises(DuplicateKey) as caught:
        loads_unique('[1, {"x": [{}, {"y": 1, "z": 2, "y": 3}]}]')
    assert caught.value.path == "[1].x[1].y"


def test_a_chunked_body_the_server_cannot_read_is_a_411_not_an_empty_body(
    admin: Any,
) -> None:
    response = admin.generic(
        "POST",
        "/api/v1/select",
        b"",
        content_type="application/json",
        HTTP_TRANSFER_ENCODING="chunked",
        CONTENT_LENGTH="",
    )
    assert response.status_code == 411
    assert response.json()["error"] == "length_required"


def test_a_form_posts_csrf_token_is_not_an_unknown_field(admin: Any) -> None:
    body = {"slug": "formed", "name": "Formed", "csrfmiddlewaretoken": "t"}
    response = admin.post("/api/v1/catalogs/", body)  # multipart, as a form posts
    assert response.status_code == 201, response.content


def test_a_csrf_token_in_a_json_body_is_an_unknown_field(admin: Any) -> None:
    body = {"query": "weather", "csrfmiddlewaretoken": "t"}
    response = send(admin, "post", "/api/v1/select", body)
    assert list(response.json()["fields"]) == ["csrfmiddlewaretoken"]
