"""A tool imported under a safe name is still found by what its file called it
(the ranking's name field and the console's search read the original name), and
a model's call by its provider name maps back to it."""

from __future__ import annotations

import json

import pytest

from catalog.embedding_text import embedding_text
from catalog.services.tools import tool_to_spec
from selection.engine.index import name_text
from selection.engine.records import record_from_dict
from tests.factories import make_tool
from tests.selection.test_tool_calls_parse import openai_call, openai_response

pytestmark = pytest.mark.django_db


@pytest.fixture
def renamed():
    make_tool(name="get_weather", description="Current weather for a city.")
    return make_tool(
        name="Wetter_fur_Koln/aktuell",
        original_name="Wetter f\u00fcr K\u00f6ln: aktuell",
        description="Das Wetter.",
    )


def select(client, query: str) -> list[str]:
    body = {"query": query, "scorer": "keyword", "max_candidates": 3}
    response = client.post("/api/v1/select", body, format="json")
    assert response.status_code == 200, response.json()
    return [tool["name"] for tool in response.json()["tools"]]


def test_the_ranking_reads_the_original_name_s_words_the_name_lacks(renamed):
    record = record_from_dict(tool_to_spec(renamed).to_dict(), renamed.pk, 0)
    assert name_text(record) == "Wetter fur Koln/aktuell f\u00fcr k\u00f6ln"
    assert "f\u00fcr k\u00f6ln" in embedding_text(tool_to_spec(renamed)).split("\n")[0]


def test_a_query_in_the_original_name_s_words_finds_the_tool(with_key, renamed):
    assert select(with_key("agent"), "K\u00f6ln") == ["Wetter_fur_Koln/aktuell"]


def test_the_console_search_finds_a_tool_by_its_original_name(as_curator, renamed):
    page = as_curator.get("/tools/", {"q": "f\u00fcr K\u00f6ln"})
    assert page.status_code == 200
    assert "Wetter_fur_Koln/aktuell" in page.content.decode()
    assert "get_weather" not in page.content.decode()


def test_a_call_by_the_provider_name_maps_back_to_the_renamed_tool(with_key, renamed):
    assert renamed.provider_name == "Wetter_fur_Koln_aktuell"
    output = openai_response(
        openai_call(json.dumps({"city": "Paris"}), "Wetter_fur_Koln_aktuell")
    )
    response = with_key("agent").post(
        "/api/v1/tool-calls/validate", {"output": output}, format="json"
    )
    assert response.status_code == 200, response.json()
    [call] = response.json()["calls"]
    assert call["tool"] == "Wetter_fur_Koln/aktuell"
    assert call["valid"] is True
