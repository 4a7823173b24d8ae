"""docs/tutorials/official-mcp-servers.md shows what these servers answer through
Quiver: each marked output is checked here against the package's servers (the
repository path and the HTTP server's port are the test's own)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.test import override_settings

from catalog.models import Tool
from sources.models import Source
from tests.docs.shown import as_printed, check_shown
from tests.servers.conftest import Official
from tests.servers.helpers import agent, execute

pytestmark = pytest.mark.django_db
PAGE = "docs/tutorials/official-mcp-servers.md"
EVERYTHING = "http://127.0.0.1:3001/mcp"  # where the page runs it


def forget(source: str) -> None:
    """The source and its tools gone (in this test's transaction only), so the
    page's adding it can be run again."""
    Source.objects.filter(name=source).delete()
    Tool.objects.filter(name__startswith=f"{source}__").delete()


def test_adding_the_http_server_and_its_sync_answer_as_shown(
    official: Official, everything_url
):
    admin = agent(official.admin_key)
    first = admin.get(f"/api/v1/jobs/{official.jobs['everything-http'].pk}/")
    forget("everything-http")

    added = admin.post(
        "/api/v1/catalogs/default/sources",
        {"name": "everything-http", "kind": "mcp", "url": everything_url},
        format="json",
    )

    assert added.status_code == 201, added.json()
    printed = as_printed(added.json()).replace(everything_url, EVERYTHING)
    check_shown(PAGE, "official-added", printed)
    check_shown(PAGE, "official-synced", as_printed(first.json()))


def test_adding_a_stdio_server_says_what_the_page_shows(
    official: Official, sources_file
):
    forget("git")
    out = StringIO()
    with override_settings(QUIVER_SOURCES_FILE=sources_file):
        call_command("add_stdio_source", "default", "git", stdout=out)
    check_shown(PAGE, "official-git-added", out.getvalue())


def test_finding_and_calling_the_tools_answer_as_shown(official: Official):
    found = agent(official.agent_key).post(
        "/api/v1/select", {"query": "what time is it now in Tokyo"}, format="json"
    )
    _, now = execute(
        official.agent_key, "time__get_current_time", {"timezone": "Asia/Tokyo"}
    )
    _, image = execute(official.agent_key, "everything__get-tiny-image", {})
    status, reset = execute(
        official.agent_key, "git__git_reset", {"repo_path": str(official.repo)}
    )

    check_shown(PAGE, "official-select", as_printed(found.json()))
    check_shown(PAGE, "official-time", as_printed(now))
    check_shown(PAGE, "official-image", as_printed(image))
    assert status == 202
    check_shown(PAGE, "official-reset", as_printed(reset))
