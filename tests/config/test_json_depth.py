"""JSON nested too deep is refused before it is parsed: a 400 naming the body."""

from __future__ import annotations

import io
import json

import pytest

from catalog.models import Tool
from config import jsonparse
from jobs.models import Job

pytestmark = pytest.mark.django_db

DEEP = "[" * 10_000 + "]" * 10_000


def test_the_depth_count_ignores_brackets_inside_strings():
    text = json.dumps({"a": "[[[[{{{{", "b": [[1]], "c": '\\"[['})
    assert jsonparse.nesting_depth(text) == 3


def test_the_loader_refuses_deep_documents_without_recursing():
    with pytest.raises(jsonparse.JSONTooDeep, match="deeper than 64 levels"):
        jsonparse.loads(DEEP)
    assert jsonparse.loads("[" * 64 + "]" * 64) is not None


@pytest.mark.parametrize(
    "url",
    ["/api/v1/select", "/api/v1/select/batch", "/api/v1/validate", "/api/v1/tools/"],
)
def test_a_body_nested_ten_thousand_deep_is_a_400_naming_the_body(with_key, url):
    client = with_key("curator")
    response = client.generic("POST", url, DEEP, content_type="application/json")
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "invalid"
    assert body["detail"] == "body: JSON nested deeper than 64 levels"
    assert not Tool.objects.exists()


def test_a_deep_document_inside_a_tool_body_writes_nothing(with_key):
    client = with_key("curator")
    deep = "{" + '"a":{' * 200 + "}" * 200 + "}"
    text = '{"name": "deep_tool", "parameters": ' + deep + "}"
    response = client.generic(
        "POST", "/api/v1/tools/", text, content_type="application/json"
    )
    assert response.status_code == 400
    assert not Tool.objects.exists()


def test_an_uploaded_import_file_nested_too_deep_is_refused(with_key):
    client = with_key("curator")
    upload = io.BytesIO(DEEP.encode())
    upload.name = "tools.json"
    response = client.post(
        "/api/v1/catalogs/default/import", {"file": upload}, format="multipart"
    )
    assert response.status_code == 400
    assert "nested deeper than 64 levels" in response.json()["detail"]
    assert not Job.objects.exists()


def test_nan_in_a_body_is_a_parse_error(with_key):
    client = with_key("curator")
    response = client.generic(
        "POST", "/api/v1/tools/", '{"name": "x", "cost_per_call": NaN}',
        content_type="application/json",
    )  # fmt: skip
    assert response.status_code == 400
    assert not Tool.objects.exists()
