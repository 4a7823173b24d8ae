"""A listing is read to ``MESSAGE_CAP`` at most (16 MiB a message), like a call's
result to its cap: an upstream answering ``tools/list`` with 100 MB, over HTTP
or as one line of a stdio command, is read no further; the sync fails naming
the limit and changes no tool, the connection test says so, and the process
never holds the listing whole."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from catalog.models import Tool
from sources.capped import MESSAGE_CAP
from sources.models import SourceStatus
from sources.services import add_stdio_source
from sources.upstream import check_connection
from tests.calls.test_result_cap import peak_while
from tests.sources.conftest import sync
from tests.upstream import Upstream, running_upstream

pytestmark = pytest.mark.django_db

FLOOD = 100_000_000
# Room for what reading to the cap holds (the bytes read, a copy or two of them),
# far below what reading the listing whole would (its 100 MB, then parsed).
HELD_AT_MOST = 3 * MESSAGE_CAP
SCRIPT = str(Path(__file__).resolve().parents[1] / "stdio_upstream.py")


@pytest.fixture(scope="module")
def flooding() -> Iterator[Upstream]:
    with running_upstream(Upstream(flood_bytes=FLOOD, flood_list=True)) as running:
        yield running


@pytest.fixture
def stdio_flooding(tmp_path: Path, settings: Any) -> str:
    entry = {
        "command": sys.executable,
        "args": [SCRIPT],
        "env": {"STDIO_UPSTREAM_LIST_BYTES": str(FLOOD)},
        "cwd": str(tmp_path),
    }
    sources_file = tmp_path / "sources.json"
    sources_file.write_text(json.dumps({"stdio": {"flooding": entry}}))
    settings.QUIVER_SOURCES_FILE = str(sources_file)
    return "flooding"


def assert_failed_at_the_cap(source: Any, job: Any, held: int) -> None:
    assert job.state == "failed" and source.status == SourceStatus.ERROR
    assert f"tools/list: message: the answer passed {MESSAGE_CAP} bytes" in (
        source.last_error
    )
    assert not Tool.objects.exists()
    assert held < HELD_AT_MOST, f"{held / 2**20:.1f} MiB held while listing"


def test_a_100_mb_listing_over_http_is_read_only_to_the_cap(flooding, make_source):
    source = make_source(flooding.url, name="flood")

    job, held = peak_while(lambda: sync(source))

    assert_failed_at_the_cap(source, job, held)


def test_the_connection_test_names_the_listings_limit(flooding, make_source):
    answer = check_connection(make_source(flooding.url, name="flood"))
    assert answer["ok"] is False
    assert f"passed {MESSAGE_CAP} bytes" in answer["reason"]


def test_a_100_mb_listing_line_from_a_stdio_command_is_read_only_to_the_cap(
    stdio_flooding, catalog, admin_user
):
    added = add_stdio_source(
        catalog, name="flood", stdio_name=stdio_flooding, actor=admin_user
    )
    source = added.source

    job, held = peak_while(lambda: sync(source))

    assert_failed_at_the_cap(source, job, held)
