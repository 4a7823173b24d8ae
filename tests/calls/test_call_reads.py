"""The call path's one read (calls.reads: the catalog, its tools of the called
name, their links and sources, with SQL made once per process) gives what the
querysets give, and nothing a call keeps between calls outlives a change: an
edited tool, link, source, header or key counts from the very next call."""

from __future__ import annotations

from typing import Any

import pytest
from django.forms.models import model_to_dict
from django.http import Http404

from calls.reads import read_call
from catalog.models import Tool
from catalog.services import ensure_default_catalog
from catalog.services.tools import set_tool_status
from identity.access import Access
from selection.models import SelectionSettings
from selection.querysets import StoredSettings
from selection.services.settings import update_selection_settings
from selection.services.tool_calls import decide_call
from sources.models import Source, SourceTool
from sources.services import update_source
from tests.calls.conftest import link_source
from tests.calls.test_execute_api import FORECAST, calls_recorded, execute
from tests.factories import make_tool, stored_past_the_rules
from tests.upstream import running_upstream

EVERYONE = Access(scope="admin", catalogs=None, roles=None, allow_unsafe=True)


def fields_of(instance: Any) -> dict[str, Any]:
    return {
        field.attname: getattr(instance, field.attname)
        for field in instance._meta.concrete_fields
    }


@pytest.fixture
def agent(with_key: Any) -> Any:
    return with_key("agent", "agent-reads", allow_unsafe=True)


def test_the_read_gives_the_rows_the_orm_gives_with_nothing_left_to_query(
    linked, django_assert_num_queries
):
    with django_assert_num_queries(1):
        rows = read_call(EVERYONE, "default", FORECAST)
        [tool] = rows.tools
        link, source = tool.source_link, tool.source_link.source
        assert link.tool is tool and tool.catalog is rows.catalog
    orm = Tool.objects.select_related("catalog", "source_link__source").get(
        name=FORECAST
    )
    assert fields_of(rows.catalog) == fields_of(orm.catalog)
    assert fields_of(tool) == fields_of(orm)
    assert fields_of(link) == fields_of(orm.source_link)
    assert fields_of(source) == fields_of(orm.source_link.source)
    assert model_to_dict(tool) == model_to_dict(orm)


def test_the_read_brings_the_catalogs_settings_row_as_the_queryset_reads_it(
    linked, admin_user, django_assert_num_queries
):
    catalog = ensure_default_catalog()
    assert read_call(EVERYONE, "default", FORECAST).settings == StoredSettings(None, 0)
    update_selection_settings(catalog, {"candidate_pool": 40}, actor=admin_user)
    with django_assert_num_queries(1):
        found = read_call(EVERYONE, "default", FORECAST).settings
    assert found == SelectionSettings.objects.stored_for(catalog)
    assert found.version > 0 and found.effective().candidate_pool == 40
    # A catalog without the called tool still brings its settings.
    assert read_call(EVERYONE, "default", "no_such_tool").settings == found


def test_a_settings_change_after_a_call_decides_the_very_next_one(db, admin_user):
    catalog = ensure_default_catalog()
    bare = make_tool(
        catalog,
        "bare_tool",
        parameters=None,
        allow_no_schema=True,
        no_schema_mode="full",
    )

    def decided() -> dict[str, Any]:
        rows = read_call(EVERYONE, "default", bare.name)
        tool, answer = decide_call(
            rows.catalog, EVERYONE, None, bare.name, {}, rows.tools, rows.settings
        )
        assert tool is not None and tool.pk == bare.pk
        return answer

    assert "not_allowed" in decided()["flags"]  # "full" is not allowed by default
    allowing = {"no_schema_modes_allowed": ["read-only", "full"]}
    update_selection_settings(catalog, allowing, actor=admin_user)
    assert "not_allowed" not in decided()["flags"]
    update_selection_settings(catalog, {}, actor=admin_user)
    assert "not_allowed" in decided()["flags"]


def test_it_finds_the_one_tool_a_name_calls_by_name_or_provider_name(db):
    catalog = ensure_default_catalog()
    plain = make_tool(catalog, "plain.tool")
    make_tool(catalog, "other_tool")
    for called in ("plain.tool", "plain_tool"):
        rows = read_call(EVERYONE, "default", called)
        assert [tool.pk for tool in rows.tools] == [plain.pk]
        assert getattr(rows.tools[0], "source_link", None) is None
        assert rows.ambiguous is False
    assert read_call(EVERYONE, "default", "no_such_tool").tools == []
    assert read_call(EVERYONE, "default", "plain_too1").tools == []  # a look-alike


def test_a_name_two_tools_held_before_the_rule_calls_neither(db):
    catalog = ensure_default_catalog()
    plain = make_tool(catalog, "plain.tool")  # called plain_tool by a model
    other = stored_past_the_rules(make_tool(catalog, "other"), name="plain_tool")
    rows = read_call(EVERYONE, "default", "plain_tool")
    assert rows.tools == [] and rows.ambiguous is True
    assert [tool.pk for tool in read_call(EVERYONE, "default", "plain.tool").tools] == [
        plain.pk
    ]
    assert [tool.pk for tool in read_call(EVERYONE, "default", "other").tools] == [
        other.pk
    ]


def test_a_catalog_the_caller_may_not_see_is_an_unknown_one_and_is_not_read(
    db, django_assert_num_queries
):
    limited = Access(scope="agent", catalogs=("other",), roles=(), allow_unsafe=False)
    with django_assert_num_queries(0), pytest.raises(Http404) as hidden:
        read_call(limited, "default", FORECAST)
    with pytest.raises(Http404) as unknown:
        read_call(EVERYONE, "nowhere", FORECAST)
    assert str(hidden.value) == "catalog: no catalog 'default'"
    assert str(unknown.value) == "catalog: no catalog 'nowhere'"


def test_a_tool_hidden_after_a_call_is_unknown_to_the_very_next_one(
    with_key, linked, upstream
):
    agent = with_key("agent", "agent-roles", roles=["ops"])
    assert execute(agent, FORECAST, {"city": "Oslo"}).status_code == 200
    Tool.objects.filter(name=FORECAST).update(allowed_roles=["finance"])
    response = execute(agent, FORECAST, {"city": "Oslo"})
    assert response.status_code == 404
    assert len(upstream.calls) == 1


def test_a_tool_disabled_after_a_call_is_refused_from_the_very_next_one(
    agent, linked, upstream
):
    assert execute(agent, FORECAST, {"city": "Oslo"}).status_code == 200
    set_tool_status(Tool.objects.get(name=FORECAST), "disabled", actor=None)
    response = execute(agent, FORECAST, {"city": "Oslo"})
    assert response.status_code == 403
    assert "not active" in response.json()["detail"]
    assert len(upstream.calls) == 1


def test_a_link_gone_after_a_call_stops_the_very_next_one(agent, linked, upstream):
    assert execute(agent, FORECAST, {"city": "Oslo"}).status_code == 200
    SourceTool.objects.filter(tool__name=FORECAST).update(gone=True)
    assert execute(agent, FORECAST, {"city": "Oslo"}).status_code == 409
    assert len(upstream.calls) == 1


def test_new_header_values_are_sent_from_the_very_next_call(
    agent, upstream, admin_user
):
    link_source(upstream, name="keyed", headers={"X-Api-Key": "first-secret"})
    upstream.required_headers["x-api-key"] = "first-secret"
    assert execute(agent, "keyed.get_forecast", {"city": "Oslo"}).status_code == 200
    source = Source.objects.get(name="keyed")
    update_source(source, {"headers": {"X-Api-Key": "second-secret"}}, actor=admin_user)
    upstream.required_headers["x-api-key"] = "second-secret"
    answer = execute(agent, "keyed.get_forecast", {"city": "Oslo"}).json()
    assert answer["outcome"] == "ran", answer
    assert upstream.calls[-1].headers["x-api-key"] == "second-secret"


def test_headers_read_before_a_key_change_are_not_sent_after_it(
    agent, upstream, settings
):
    settings.QUIVER_SOURCE_KEY = "first-key-material-0123456789"
    link_source(upstream, name="keyed", headers={"X-Api-Key": "s3cret-value"})
    assert execute(agent, "keyed.get_forecast", {"city": "Oslo"}).status_code == 200
    settings.QUIVER_SOURCE_KEY = "second-key-material-9876543210"
    response = execute(agent, "keyed.get_forecast", {"city": "Oslo"})
    assert response.status_code == 503
    assert response.json()["service"] == "source_headers"
    assert len(upstream.calls) == 1


def test_a_source_moved_to_another_server_is_called_there_from_the_next_call(
    agent, linked, upstream
):
    assert execute(agent, FORECAST, {"city": "Rome"}).status_code == 200
    with running_upstream() as other:
        Source.objects.filter(name="weather").update(url=other.url)
        assert execute(agent, FORECAST, {"city": "Rome"}).json()["outcome"] == "ran"
        assert len(other.calls) == 1
    assert len(upstream.calls) == 1
    assert [e.output["outcome"] for e in calls_recorded()] == [
        "started",
        "ran",
        "started",
        "ran",
    ]
