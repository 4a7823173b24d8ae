"""sources.links: a source put behind tools its catalog already has takes only
free tools of its own catalog, by their exact names, as the system or an admin,
and says so in one audit event."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied

from audit.models import AuditEvent
from catalog.models import Catalog
from sources.links import link_tools
from sources.models import Source, SourceTool
from tests.factories import make_tool, make_user

pytestmark = pytest.mark.django_db
LISTED = {"send_email": {"name": "send_email"}, "delete_file": {"name": "delete_file"}}


@pytest.fixture
def demo(db):
    catalog = Catalog.objects.get(slug="default")
    return Source.objects.create(
        catalog=catalog, name="demo", kind="stdio", stdio_name="demo"
    )


def test_it_links_the_catalogs_tools_of_those_names_in_one_event(demo):
    make_tool(name="send_email")
    make_tool(name="delete_file")

    linked = link_tools(demo, LISTED, actor=None)

    assert linked == ["delete_file", "send_email"]
    links = SourceTool.objects.filter(source=demo).order_by("upstream_name")
    assert [(x.upstream_name, x.tool.name) for x in links] == [
        ("delete_file", "delete_file"),
        ("send_email", "send_email"),
    ]
    [event] = AuditEvent.objects.filter(event_type="source_changed")
    assert event.input == {
        "action": "link",
        "source": "demo",
        "kind": "stdio",
        "tools": ["delete_file", "send_email"],
    }


def test_a_tool_another_source_runs_is_never_taken_over(demo):
    tool = make_tool(name="send_email")
    other = Source.objects.create(
        catalog=demo.catalog, name="mail", url="https://m.example/mcp"
    )
    SourceTool.objects.create(source=other, tool=tool, upstream_name="send")

    assert link_tools(demo, LISTED, actor=None) == []
    assert SourceTool.objects.get(tool=tool).source == other
    assert not AuditEvent.objects.filter(event_type="source_changed").exists()


def test_a_tool_of_another_catalog_or_of_a_near_name_is_left_alone(demo):
    elsewhere = Catalog.objects.create(slug="other", name="Other")
    make_tool(elsewhere, "send_email")
    make_tool(name="send_email_v2")

    assert link_tools(demo, LISTED, actor=None) == []


def test_only_an_admin_may_link(demo, curator):
    make_tool(name="send_email")
    with pytest.raises(PermissionDenied):
        link_tools(demo, LISTED, actor=curator)
    assert link_tools(demo, LISTED, actor=make_user("root2", superuser=True)) == [
        "send_email"
    ]
