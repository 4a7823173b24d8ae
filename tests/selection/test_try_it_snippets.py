"""Try it's "copy as curl" and "copy as Python": the exact body the page ran, with
the key from $QUIVER_API_KEY, quoted so any query text survives the copy."""

from __future__ import annotations

import html
import json
import re
import shlex
from typing import Any

import pytest
import quiver_client
from quiver_client.wire import select_body as client_select_body

from selection.snippets import as_curl, as_python
from tests.selection.test_try_it_view import catalog, try_it  # noqa: F401

NASTY = 'it\'s "quoted" $HOME `ls` \\ and\nnewline — ünïcode'
PAYLOAD = {
    "catalog": "default",
    "allow_unsafe": False,
    "explain": True,
    "format": "canonical",
    "query": NASTY,
    "max_candidates": "3",
    "min_score": "0.05",
    "roles": ["support", "o'neil"],
}
EXPECTED = {**PAYLOAD, "max_candidates": 3, "min_score": 0.05}


def test_the_curl_command_posts_the_body_and_reads_the_key_from_the_environment():
    words = shlex.split(as_curl("http://quiver.test/", PAYLOAD))
    assert words[:5] == [
        "curl",
        "-sS",
        "-X",
        "POST",
        "http://quiver.test/api/v1/select",
    ]
    assert "Authorization: Bearer $QUIVER_API_KEY" in words
    body = words[words.index("--data-binary") + 1]
    assert json.loads(body) == EXPECTED


def test_the_python_call_is_the_client_packages_select_with_the_same_body(
    monkeypatch,
):
    calls: list[dict[str, Any]] = []

    class Recorder:
        def __init__(self, base_url: str, key: str) -> None:
            calls.append({"base_url": base_url, "key": key})

        def select(self, query: Any = None, *, messages: Any = None, **options: Any):
            calls.append(client_select_body(query, messages, options))
            return {"tools": []}

    monkeypatch.setattr(quiver_client, "Quiver", Recorder)
    monkeypatch.setenv("QUIVER_API_KEY", "qv_test_key")
    exec(compile(as_python("http://quiver.test", PAYLOAD), "<snippet>", "exec"), {})
    assert calls[0] == {"base_url": "http://quiver.test", "key": "qv_test_key"}
    assert calls[1] == EXPECTED


def test_a_chat_transcript_is_passed_as_messages():
    chat = [{"role": "user", "content": "weather in Oslo?"}]
    snippet = as_python("http://q", {"catalog": "default", "messages": chat})
    assert "messages=[{'role': 'user', 'content': 'weather in Oslo?'}]" in snippet
    assert "quiver.select(\n    catalog='default'," in snippet


@pytest.mark.django_db
def test_a_run_offers_both_copies_of_exactly_what_it_ran(as_member, catalog):  # noqa: F811
    response = try_it(as_member, query="weather in 'Paris'", block_tools="send_email")
    page = response.content.decode()
    assert 'data-testid="copy-curl"' in page
    assert 'data-testid="copy-python"' in page
    curl = html.unescape(re.search(r'id="try-curl"><code>(.*?)</code>', page, re.S)[1])
    words = shlex.split(curl)
    assert words[4] == "http://testserver/api/v1/select"
    sent = json.loads(words[words.index("--data-binary") + 1])
    assert sent["query"] == "weather in 'Paris'"
    assert sent["block_tools"] == ["send_email"]
    assert sent["max_candidates"] == 3
    assert "qv_" not in curl  # never a key on the page


@pytest.mark.django_db
def test_a_refused_run_offers_no_copy(as_member, catalog):  # noqa: F811
    response = try_it(as_member, query="", max_candidates="0")
    assert 'data-testid="copy-curl"' not in response.content.decode()
