"""examples/tool_search.py runs against a live server with no LLM key."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from catalog.naming import provider_safe_name  # noqa: F401  (the names it prints)
from tests.demo import embed_demo, load_demo_catalog
from tests.docs.shown import check_shown
from tests.factories import make_client_key

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tool_search.py"

pytestmark = pytest.mark.django_db(transaction=True)


def run_example(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLE)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_example_plays_both_providers_turns_against_the_server(live_quiver):
    done = run_example(
        {"QUIVER_URL": live_quiver.url, "QUIVER_API_KEY": live_quiver.key}
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert '"type": "tool_reference"' in out
    assert '"tool_name": "send_email"' in out
    assert '"type": "tool_search_output"' in out
    assert '"execution": "client"' in out
    assert "Anthropic search referenced: send_email" in out
    assert "OpenAI search returned: get_weather" in out
    assert "the model's call of send_email: valid=False" in out


def test_the_example_without_a_key_says_how_to_make_one(live_quiver):
    done = run_example({"QUIVER_URL": live_quiver.url, "QUIVER_API_KEY": ""})
    assert done.returncode == 2
    assert "QUIVER_API_KEY" in done.stdout


def test_on_make_runs_demo_the_example_prints_what_the_tutorial_shows(
    live_server, tmp_path, monkeypatch
):
    embed_demo(load_demo_catalog(tmp_path, monkeypatch))
    key = make_client_key("example", "agent")

    done = run_example({"QUIVER_URL": live_server.url, "QUIVER_API_KEY": key})

    assert done.returncode == 0, done.stderr
    check_shown(
        "docs/tutorials/provider-tool-search.md", "tool-search-example", done.stdout
    )
