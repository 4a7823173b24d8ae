"""The 5,000-tool cap holds on every shape of listing: one page of any size, or
any number of pages, is refused once it passes the cap (the sync fails naming it
and changes no tool, the connection test says so), and the listing stops at the
page that crosses it: no further page is asked for, no tool of it is synced.

The shapes are tried against the real cap where the issue measured them (6,000
in one page, 5,100 over two) and against a cap of 50 for the rest, to keep the
suite quick: the rule is the same code."""

from __future__ import annotations

import pytest

from catalog.models import Tool
from sources import upstream as upstream_module
from sources.models import SourceStatus
from sources.upstream import UpstreamError, check_connection, list_tools
from tests.sources.conftest import sync
from tests.upstream import Upstream, upstream_tool

pytestmark = pytest.mark.django_db


def listing(upstream: Upstream, tools: int, page_size: int) -> None:
    upstream.tools = {
        f"t{n}": upstream_tool(f"t{n}", "A tool.", read_only=True) for n in range(tools)
    }
    upstream.page_size = page_size


@pytest.fixture
def cap_of_50(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(upstream_module, "MAX_TOOLS", 50)
    return 50


@pytest.mark.parametrize(
    ("tools", "page_size", "pages_read"), [(6000, 6000, 1), (5100, 2550, 2)]
)
def test_the_issues_listings_are_refused_at_the_real_cap(
    upstream, make_source, tools, page_size, pages_read
):
    listing(upstream, tools, page_size)
    with pytest.raises(UpstreamError, match="more than 5000 tools"):
        list_tools(make_source(upstream.url))
    assert upstream.list_requests == pages_read


@pytest.mark.parametrize(
    ("tools", "page_size", "pages_read"),
    [
        (51, 100, 1),  # one page, one past the cap
        (1000, 1000, 1),
        (60, 30, 2),  # two pages, each under it
        (150, 30, 2),  # the third page is never asked for
        (1000, 10, 6),
    ],
)
def test_a_listing_past_the_cap_stops_at_the_page_that_crosses_it(
    upstream, make_source, cap_of_50, tools, page_size, pages_read
):
    listing(upstream, tools, page_size)
    with pytest.raises(UpstreamError, match="more than 50 tools"):
        list_tools(make_source(upstream.url))
    assert upstream.list_requests == pages_read


@pytest.mark.parametrize("page_size", [50, 25, 7])
def test_exactly_the_cap_is_listed_whole(upstream, make_source, cap_of_50, page_size):
    listing(upstream, 50, page_size)
    assert len(list_tools(make_source(upstream.url)).tools) == 50


def test_a_sync_past_the_cap_fails_naming_it_and_keeps_every_tool(
    upstream, make_source, cap_of_50
):
    source = make_source(upstream.url)
    sync(source)
    before = {t.name: (t.version, t.status) for t in Tool.objects.all()}
    listing(upstream, 60, 100)
    upstream.list_requests = 0

    job = sync(source)

    assert job.state == "failed" and source.status == SourceStatus.ERROR
    assert "more than 50 tools (60 by page 1)" in source.last_error
    assert upstream.list_requests == 1
    after = {t.name: (t.version, t.status) for t in Tool.objects.all()}
    assert after == before  # none deprecated as "gone", none added
    assert job.total == 0 and not job.items


def test_the_connection_test_names_the_cap(upstream, make_source, cap_of_50):
    listing(upstream, 60, 100)
    answer = check_connection(make_source(upstream.url))
    assert answer["ok"] is False and "more than 50 tools" in answer["reason"]
