"""The curators' console: server-rendered pages and their htmx fragments."""

from __future__ import annotations

import json

import pytest

from catalog.formats import FORMATS
from catalog.models import Catalog, Tool, ToolChange
from catalog.services import create_catalog, ensure_default_catalog, update_tool
from catalog.services.tools import tool_to_spec
from jobs.choices import JobKind, JobState
from jobs.models import Job
from tests.factories import make_tool, weather_schema

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}


def tool_form(**overrides):
    """What the create form posts; blank optional fields are simply left out."""
    data = {
        "catalog": "default",
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": json.dumps(weather_schema()),
        "safe": "on",
        "risk_level": "low",
        "status": "active",
        "tags": "weather, forecast",
        "examples": "What's the weather in Paris?\nIs it raining in Oslo?",
        "cost_per_call": "0.002",
        "currency": "USD",
    }
    return {**data, **overrides}


# Access ---------------------------------------------------------------------------


def test_the_root_redirects_to_the_tool_list(as_member):
    response = as_member.get("/")
    assert response.status_code == 302
    assert response["Location"] == "/tools/"


def test_the_console_sends_anonymous_visitors_to_the_login_page(client, db):
    response = client.get("/tools/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=/tools/")


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("get", "/tools/new/"),
        ("post", "/tools/new/"),
        ("get", "/tools/{id}/edit/"),
        ("post", "/tools/{id}/edit/"),
        ("post", "/tools/{id}/status/"),
        ("post", "/tools/{id}/delete/"),
        ("get", "/import/"),
        ("post", "/import/"),
        ("post", "/catalogs/"),
        ("post", "/catalogs/default/reindex/"),
    ],
)
def test_a_member_without_the_curator_group_gets_403_on_writes(as_member, method, url):
    tool = make_tool(name="get_weather")
    response = getattr(as_member, method)(
        url.format(id=tool.pk), {"status": "disabled"}
    )
    assert response.status_code == 403
    assert Tool.objects.get(pk=tool.pk).status == "active"


def test_a_member_sees_no_write_buttons(as_member):
    tool = make_tool(name="get_weather")
    page = as_member.get(f"/tools/{tool.pk}/").content.decode()
    assert "Disable" not in page
    assert f"/tools/{tool.pk}/edit/" not in page


# Tool list ------------------------------------------------------------------------


def test_the_tool_list_renders_the_whole_page(as_member):
    make_tool(name="get_weather", title="Weather now")
    response = as_member.get("/tools/")
    page = response.content.decode()
    assert response.status_code == 200
    assert "<html" in page
    assert 'id="tool-filters"' in page
    assert "get_weather" in page
    assert "Weather now" in page
    assert "hx-swap-oob" not in page


def test_an_htmx_request_gets_only_the_table_and_out_of_band_counters(as_member):
    make_tool(name="get_weather")
    response = as_member.get("/tools/", headers=HTMX)
    page = response.content.decode()
    assert "<html" not in page
    assert 'id="tool-filters"' not in page
    assert page.lstrip().startswith('<div id="tool-results"')
    assert 'id="tool-counters" class="counters" hx-swap-oob="true"' in page
    assert "1 tool" in page
    assert "1 pending embedding" in page


def test_a_boosted_htmx_request_gets_the_whole_page(as_member):
    headers = {**HTMX, "HX-Boosted": "true"}
    assert "<html" in as_member.get("/tools/", headers=headers).content.decode()


def test_the_list_response_varies_on_the_htmx_header(as_member):
    assert "HX-Request" in as_member.get("/tools/")["Vary"]


FOUR_TOOLS = ("weather_forecast", "old_lookup", "delete_user", "restart_server")


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("q=forecast", {"weather_forecast"}),
        ("status=disabled", {"old_lookup"}),
        ("safe=false", {"delete_user"}),
        ("tag=admin", {"delete_user"}),
        ("category=weather", {"weather_forecast"}),
        ("catalog=ops", {"restart_server"}),
        ("embedding_status=failed", {"old_lookup"}),
        ("status=bogus", set(FOUR_TOOLS)),
    ],
)
def test_the_list_filters_tools(as_curator, query, expected):
    make_tool(name="weather_forecast", category="weather", tags=["weather"])
    make_tool(name="old_lookup", status="disabled")
    make_tool(name="delete_user", safe=False, risk_level="high", tags=["admin"])
    make_tool(create_catalog("ops", "Operations"), name="restart_server")
    Tool.objects.filter(name="old_lookup").update(
        embedding_status="failed", embedding_error="model unreachable"
    )
    page = as_curator.get(f"/tools/?{query}", headers=HTMX).content.decode()
    shown = {name for name in FOUR_TOOLS if f">{name}</a>" in page}
    assert shown == expected


def test_a_failed_embedding_shows_its_reason_on_hover(as_member):
    tool = make_tool(name="old_lookup")
    Tool.objects.filter(pk=tool.pk).update(
        embedding_status="failed", embedding_error="model unreachable"
    )
    page = as_member.get("/tools/", headers=HTMX).content.decode()
    assert 'title="model unreachable"' in page


def test_the_list_shows_25_tools_a_page_with_htmx_pager_links(as_member):
    for number in range(30):
        make_tool(name=f"tool_{number:02}", tags=["bulk"])
    first = as_member.get("/tools/?tag=bulk", headers=HTMX).content.decode()
    assert first.count('class="tool-name"') == 25
    assert 'hx-get="/tools/?tag=bulk&amp;page=2"' in first
    assert 'hx-push-url="true"' in first
    assert 'hx-target="closest .results"' in first
    second = as_member.get("/tools/?tag=bulk&page=2", headers=HTMX).content.decode()
    assert second.count('class="tool-name"') == 5
    assert "Page 2 of 2" in second


def test_no_matching_tools_shows_an_empty_state_with_a_way_out(as_member):
    make_tool(name="get_weather")
    page = as_member.get("/tools/?q=nothing-like-this", headers=HTMX).content.decode()
    assert "No tools match “nothing-like-this”" in page
    assert "Clear filters" in page
    assert 'href="/import/"' in page


def test_the_tool_list_query_count_does_not_grow_with_the_page(
    as_member, django_assert_num_queries
):
    make_tool(name="first_tool")
    # session, user, api client, groups with their unsafe grant, catalog scope,
    # catalogs, categories, count, embedding counts, the catalogs ranked by
    # words alone, rows
    with django_assert_num_queries(11):
        as_member.get("/tools/")
    for number in range(30):
        make_tool(name=f"tool_{number:02}", tags=["t"])
    with django_assert_num_queries(11):
        response = as_member.get("/tools/")
    assert response.content.decode().count('class="tool-name"') == 25


# Tool page, status, delete, history -----------------------------------------------


def test_the_tool_page_shows_schema_metadata_and_every_provider_preview(as_member):
    tool = make_tool(name="get_weather", description="Current weather.")
    page = as_member.get(f"/tools/{tool.pk}/").content.decode()
    assert "Current weather." in page
    assert "&quot;city&quot;" in page
    for fmt in FORMATS:
        assert f'data-format="{fmt}"' in page
    assert "&quot;input_schema&quot;" in page
    assert "&quot;inputSchema&quot;" in page


def test_a_curator_disables_a_tool_with_htmx_and_gets_the_new_status(as_curator):
    tool = make_tool(name="get_weather")
    response = as_curator.post(
        f"/tools/{tool.pk}/status/", {"status": "disabled"}, headers=HTMX
    )
    page = response.content.decode()
    assert response.status_code == 200
    assert page.lstrip().startswith('<div id="tool-status"')
    assert "status-disabled" in page
    assert 'value="active"' in page
    assert 'id="tool-history" hx-swap-oob="true"' in page
    tool.refresh_from_db()
    assert (tool.status, tool.version) == ("disabled", 2)
    change = ToolChange.objects.filter(tool=tool).first()
    assert change is not None
    assert change.actor_name == "carla"


def test_a_status_change_without_htmx_redirects_to_the_tool(as_curator):
    tool = make_tool(name="get_weather")
    response = as_curator.post(f"/tools/{tool.pk}/status/", {"status": "deprecated"})
    assert response.status_code == 302
    assert Tool.objects.get(pk=tool.pk).status == "deprecated"


def test_an_unknown_status_is_a_bad_request(as_curator):
    tool = make_tool(name="get_weather")
    response = as_curator.post(f"/tools/{tool.pk}/status/", {"status": "gone"})
    assert response.status_code == 400


def test_a_curator_deletes_a_tool_and_its_history_stays(as_curator):
    tool = make_tool(name="get_weather")
    response = as_curator.post(f"/tools/{tool.pk}/delete/", headers=HTMX)
    assert response["HX-Redirect"] == "/tools/"
    assert not Tool.objects.filter(pk=tool.pk).exists()
    assert ToolChange.objects.filter(tool_name="get_weather").count() == 2


def test_the_history_partial_lists_who_when_and_which_version(as_curator, curator):
    tool = make_tool(name="get_weather")
    update_tool(tool, tool_to_spec(tool), actor=curator)
    spec = tool_to_spec(tool)
    spec.description = "Changed."
    update_tool(tool, spec, actor=curator)
    page = as_curator.get(f"/tools/{tool.pk}/history/", headers=HTMX).content.decode()
    assert "<html" not in page
    assert "v1" in page
    assert "v2" in page
    assert "carla" in page
    assert "Created" in page
    assert "Updated" in page


def test_the_diff_shows_added_and_removed_lines(as_member, curator):
    tool = make_tool(name="get_weather", description="Old words.")
    spec = tool_to_spec(tool)
    spec.description = "New words."
    update_tool(tool, spec, actor=curator)
    first, second = ToolChange.objects.filter(tool=tool).order_by("id")
    response = as_member.get(
        f"/tools/{tool.pk}/diff/?a={second.pk}&b={first.pk}", headers=HTMX
    )
    page = response.content.decode()
    assert response.status_code == 200
    removed = '<div class="diff-line removed">-  &quot;description&quot;: &quot;Old'
    added = '<div class="diff-line added">+  &quot;description&quot;: &quot;New'
    assert removed in page
    assert added in page
    assert "From <strong>v1</strong>" in page


def test_a_diff_needs_two_changes_of_this_tool(as_member):
    tool = make_tool(name="get_weather")
    other = make_tool(name="other_tool")
    change = ToolChange.objects.get(tool=tool)
    other_change = ToolChange.objects.get(tool=other)
    assert as_member.get(f"/tools/{tool.pk}/diff/?a={change.pk}").status_code == 400
    url = f"/tools/{tool.pk}/diff/?a={change.pk}&b={other_change.pk}"
    assert as_member.get(url).status_code == 404


# Create and edit ------------------------------------------------------------------


def test_a_curator_creates_a_tool_and_lands_on_its_page(as_curator):
    response = as_curator.post("/tools/new/", tool_form())
    tool = Tool.objects.get(name="get_weather")
    assert response.status_code == 302
    assert response["Location"] == f"/tools/{tool.pk}/"
    assert tool.tags == ["weather", "forecast"]
    assert tool.examples == ["What's the weather in Paris?", "Is it raining in Oslo?"]
    assert tool.parameters == weather_schema()
    assert tool.created_by is not None


def test_a_bad_schema_re_renders_with_the_pointer_named_error_and_keeps_the_input(
    as_curator,
):
    bad = '{"type": "object", "properties": {"city": {"type": "strnig"}}}'
    response = as_curator.post(
        "/tools/new/", tool_form(parameters=bad, description="Typed by hand.")
    )
    page = response.content.decode()
    assert response.status_code == 200
    assert not Tool.objects.exists()
    assert "The tool was not saved." in page
    assert "/parameters/properties/city/type" in page
    assert "strnig" in page
    assert "Typed by hand." in page
    assert "What&#x27;s the weather in Paris?" in page


def test_invalid_json_in_the_schema_names_line_and_column(as_curator):
    response = as_curator.post("/tools/new/", tool_form(parameters='{"type": '))
    page = response.content.decode()
    assert "parameters: not valid JSON" in page
    assert "line 1, column 10" in page


def test_a_taken_name_is_an_error_on_the_name_field(as_curator):
    make_tool(name="get_weather")
    page = as_curator.post("/tools/new/", tool_form()).content.decode()
    assert "a tool named &#x27;get_weather&#x27; already exists" in page
    assert 'data-field="name"' in page
    assert Tool.objects.count() == 1


def test_the_edit_form_shows_the_stored_tool(as_curator):
    tool = make_tool(name="get_weather", tags=["a", "b"], examples=["one", "two"])
    page = as_curator.get(f"/tools/{tool.pk}/edit/").content.decode()
    assert 'value="get_weather"' in page
    assert "a, b</textarea>" in page
    assert "one\ntwo</textarea>" in page
    assert "&quot;required&quot;: [" in page


def test_editing_a_tool_saves_a_new_version_after_its_preview(as_curator):
    tool = make_tool(name="get_weather")
    data = tool_form(description="Better words.")
    del data["catalog"]
    preview = as_curator.post(f"/tools/{tool.pk}/edit/", data)
    assert preview.status_code == 200
    token = preview.context["preview_token"]
    response = as_curator.post(f"/tools/{tool.pk}/edit/", {**data, "confirm": token})
    assert response.status_code == 302
    tool.refresh_from_db()
    assert (tool.description, tool.version) == ("Better words.", 2)


def test_the_schema_check_lists_problems_by_pointer_and_rule_until_it_is_ok(
    as_curator,
):
    def check(schema):
        url = "/tools/validate-schema/"
        return as_curator.post(
            url, {"parameters": schema}, headers=HTMX
        ).content.decode()

    bad = check('{"type": "object", "properties": {"city": {"type": "strnig"}}}')
    assert "<html" not in bad
    assert '<code class="pointer">/parameters/properties/city/type</code>' in bad
    assert '<span class="rule">metaschema</span>' in bad
    assert '<span class="rule">json</span>' in check("{")
    assert "Schema OK" in check(json.dumps(weather_schema()))


# Import and jobs ------------------------------------------------------------------


def test_an_unreadable_document_is_an_error_that_keeps_the_text(as_curator):
    response = as_curator.post(
        "/import/", {"catalog": "default", "text": '{"nothing": "here"}'}
    )
    page = response.content.decode()
    assert response.status_code == 200
    assert "expected a list of tools" in page
    assert "&quot;nothing&quot;" in page
    assert not Job.objects.exists()


def running_job(**fields):
    created = {"index": 0, "name": "a", "outcome": "created", "reason": ""}
    fields.setdefault("counts", {"created": 1, "rejected": 0})
    fields.setdefault("items", [created])
    return Job.objects.create(
        kind=fields.pop("kind", JobKind.IMPORT),
        catalog=ensure_default_catalog(),
        **{"state": JobState.RUNNING, "total": 4, "done": 1, **fields},
    )


def test_a_running_job_partial_polls_every_second(as_member):
    job = running_job()
    response = as_member.get(f"/jobs/{job.pk}/", headers=HTMX)
    page = response.content.decode()
    assert "<html" not in page
    assert page.lstrip().startswith('<section id="job-progress"')
    assert 'hx-trigger="every 1s"' in page
    assert 'aria-valuenow="25"' in page
    assert "1 / 4" in page


def test_a_finished_job_stops_polling_and_shows_counts_and_rejections(as_curator):
    reason = "tools[1].name: is required"
    job = running_job(
        state=JobState.SUCCEEDED,
        done=2,
        total=2,
        counts={"created": 1, "rejected": 1},
        items=[{"index": 1, "name": None, "outcome": "rejected", "reason": reason}],
    )
    page = as_curator.get(f"/jobs/{job.pk}/", headers=HTMX).content.decode()
    assert "every 1s" not in page
    assert 'aria-valuenow="100"' in page
    assert "<dt>rejected</dt><dd>1</dd>" in page
    assert "tools[1].name: is required" in page


def test_a_reindex_job_shows_embedded_and_unchanged_counts(as_member):
    job = running_job(
        kind=JobKind.REINDEX,
        counts={"embedded": 3, "unchanged": 1, "failed": 0, "cursor": 9},
        items=[],
    )
    page = as_member.get(f"/jobs/{job.pk}/").content.decode()
    assert "<dt>embedded</dt><dd>3</dd>" in page
    assert "cursor" not in page


def test_the_job_list_links_each_job(as_member):
    job = running_job()
    page = as_member.get("/jobs/").content.decode()
    assert f'href="/jobs/{job.pk}/"' in page


# Catalogs -------------------------------------------------------------------------


def test_the_catalog_page_shows_counts_and_export_links(as_member):
    make_tool(name="get_weather")
    make_tool(name="old_lookup", status="disabled")
    page = as_member.get("/catalogs/").content.decode()
    assert "2 pending" in page
    assert "1 disabled" in page
    assert 'href="/api/v1/catalogs/default/export?format=anthropic"' in page
    assert "Re-embed catalog" not in page


def test_a_curator_creates_a_catalog_once_per_slug(as_curator):
    response = as_curator.post("/catalogs/", {"slug": "ops", "name": "Operations"})
    assert response.status_code == 302
    assert Catalog.objects.filter(slug="ops", name="Operations").exists()
    again = as_curator.post("/catalogs/", {"slug": "ops"}).content.decode()
    assert "already exists" in again


def test_re_embedding_a_catalog_starts_a_reindex_job(as_curator):
    make_tool(name="get_weather")
    response = as_curator.post("/catalogs/default/reindex/")
    job = Job.objects.get()
    assert job.kind == "reindex"
    assert response["Location"] == f"/jobs/{job.pk}/"
