"""Tool names that hide characters (bidi overrides, zero-width) are refused, naming
``name`` and each character, so what a curator reads is what a model is offered."""

from __future__ import annotations

import pytest

from catalog.models import Tool
from catalog.naming import hidden_characters
from tests.factories import weather_schema

pytestmark = pytest.mark.django_db


def test_bidi_controls_and_zero_width_characters_are_found_by_name():
    assert hidden_characters("bi_\u202eevil\u200b") == [
        "U+202E RIGHT-TO-LEFT OVERRIDE",
        "U+200B ZERO WIDTH SPACE",
    ]
    assert hidden_characters("Wetter für Köln / 天気") == []


@pytest.mark.parametrize(
    "name", ["bi_\u202eevil\u200b", "a\u2066b", "zw\u200djoin", "bom\ufeff", "nl\n"]
)
def test_a_name_with_hidden_characters_is_a_400_naming_name(with_key, name):
    body = {"name": name, "parameters": weather_schema()}
    response = with_key("curator").post("/api/v1/tools/", body, format="json")
    assert response.status_code == 400
    message = response.json()["fields"]["name"][0]
    assert message.startswith(
        "name: must not contain invisible or direction-changing characters (U+"
    )
    assert not Tool.objects.exists()


def test_a_provider_name_with_a_trailing_newline_is_refused(with_key):
    body = {"name": "ok", "provider_name": "ok\n", "parameters": weather_schema()}
    response = with_key("curator").post("/api/v1/tools/", body, format="json")
    assert response.status_code == 400
    assert "provider_name" in response.json()["fields"]
    assert not Tool.objects.exists()
