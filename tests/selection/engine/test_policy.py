"""Policy rules: each one excludes with its own reason code before ranking."""

from __future__ import annotations

from selection.engine import SelectionRequest, select

from .helpers import snapshot, tools

WEATHER = "weather forecast for Paris"


def _excluded(result, name):
    return {e.name: e for e in result.excluded}.get(name)


def test_an_unsafe_tool_is_excluded_unless_allowed():
    snap = snapshot(tools(getWeatherForecast={"safe": False}))
    result = select(snap, SelectionRequest(query=WEATHER))
    assert "getWeatherForecast" not in result.names
    exclusion = _excluded(result, "getWeatherForecast")
    assert (exclusion.stage, exclusion.reason) == ("policy", "unsafe")
    allowed = select(snap, SelectionRequest(query=WEATHER, allow_unsafe=True))
    assert allowed.names[0] == "getWeatherForecast"


def test_disabled_and_deprecated_tools_are_excluded_by_status():
    snap = snapshot(
        tools(
            getWeatherForecast={"status": "disabled"},
            searchWeb={"status": "deprecated"},
        )
    )
    result = select(snap, SelectionRequest(query="weather forecast and web search"))
    assert result.names == []
    assert _excluded(result, "getWeatherForecast").reason == "status"
    assert _excluded(result, "searchWeb").reason == "status"
    assert "disabled" in _excluded(result, "getWeatherForecast").detail


def test_a_tool_limited_to_other_roles_is_excluded_for_the_caller():
    snap = snapshot(tools(getWeatherForecast={"allowed_roles": ("admin",)}))
    as_user = select(snap, SelectionRequest(query=WEATHER, roles=("user",)))
    assert _excluded(as_user, "getWeatherForecast").reason == "role"
    as_admin = select(snap, SelectionRequest(query=WEATHER, roles=("user", "admin")))
    assert as_admin.names[0] == "getWeatherForecast"
    no_filter = select(snap, SelectionRequest(query=WEATHER))
    assert no_filter.names[0] == "getWeatherForecast"


def test_a_tool_without_schema_passes_only_in_an_allowed_mode():
    no_schema = {"has_schema": False, "allow_no_schema": True}
    snap = snapshot(
        tools(
            getWeatherForecast={**no_schema, "no_schema_mode": "read-only"},
            searchWeb={**no_schema, "no_schema_mode": "full"},
            send_email={"has_schema": False},
        )
    )
    result = select(snap, SelectionRequest(query="weather forecast web search email"))
    assert "getWeatherForecast" in result.names
    assert _excluded(result, "searchWeb").reason == "no_schema_mode"
    assert _excluded(result, "send_email").reason == "no_schema_mode"
    relaxed = snapshot(snap.tools, no_schema_modes_allowed=["read-only", "full"])
    assert "searchWeb" in select(relaxed, SelectionRequest(query="web search")).names


def test_a_tool_costing_more_than_the_limit_is_excluded():
    snap = snapshot(tools(getWeatherForecast={"cost_per_call": 0.5}))
    result = select(snap, SelectionRequest(query=WEATHER, max_cost_per_call=0.1))
    assert _excluded(result, "getWeatherForecast").reason == "budget_cost"
    assert select(snap, SelectionRequest(query=WEATHER, max_cost_per_call=0.5)).names


def test_the_token_budget_skips_tools_greedily_down_the_ranking():
    snap = snapshot(
        tools(
            getWeatherForecast={"prompt_tokens": 300},
            searchWeb={"prompt_tokens": 50},
            send_email={"prompt_tokens": 50},
        )
    )
    request = SelectionRequest(
        query="weather forecast, web search and email", max_total_tokens=120
    )
    result = select(snap, request)
    assert "getWeatherForecast" not in result.names
    assert {"searchWeb", "send_email"} <= set(result.names)
    exclusion = _excluded(result, "getWeatherForecast")
    assert (exclusion.stage, exclusion.reason) == ("policy", "budget_tokens")


def test_required_capabilities_exclude_tools_that_lack_them():
    snap = snapshot(tools(getWeatherForecast={"capabilities": ("streaming",)}))
    request = SelectionRequest(
        query="weather forecast web search", require_capabilities=("streaming",)
    )
    result = select(snap, request)
    assert result.names == ["getWeatherForecast"]
    assert _excluded(result, "searchWeb").reason == "capability"


def test_block_and_allow_lists_filter_by_name():
    snap = snapshot()
    query = "weather forecast web search"
    blocked = select(snap, SelectionRequest(query=query, block_tools=("searchWeb",)))
    assert _excluded(blocked, "searchWeb").reason == "blocked"
    only = select(snap, SelectionRequest(query=query, allow_tools=("searchWeb",)))
    assert only.names == ["searchWeb"]
    assert _excluded(only, "getWeatherForecast").reason == "not_allowed"


def test_explicit_categories_filter_tools():
    snap = snapshot()
    request = SelectionRequest(
        query="weather forecast web search", categories=("Search",)
    )
    result = select(snap, request)
    assert result.names == ["searchWeb"]
    assert _excluded(result, "getWeatherForecast").reason == "category"


def test_an_inferred_category_gates_only_above_the_confidence_threshold():
    request = SelectionRequest(query="weather forecast temperature then send email")
    ungated = select(snapshot(category_confidence_threshold=None), request)
    assert {"getWeatherForecast", "send_email"} <= set(ungated.names)
    gated = select(snapshot(category_confidence_threshold=0.5), request)
    assert gated.names == ["getWeatherForecast"]
    exclusion = _excluded(gated, "send_email")
    assert (exclusion.stage, exclusion.reason) == ("policy", "category")
    assert "weather" in exclusion.detail
    strict = select(snapshot(category_confidence_threshold=0.99), request)
    assert {"getWeatherForecast", "send_email"} <= set(strict.names)


def test_policy_stats_count_every_excluded_tool():
    snap = snapshot(tools(send_email={"safe": False}, calculate={"status": "disabled"}))
    result = select(snap, SelectionRequest(query=WEATHER))
    assert result.stats.considered == 5
    assert result.stats.excluded_by_policy == 2


def test_kept_policy_codes_are_the_codes_of_their_own_snapshot_and_read_only():
    from selection.engine.policy import kept_policy_codes, policy_codes

    request = SelectionRequest(query="", roles=("ops",), visible_roles=("ops",))
    open_snap = snapshot(tools())
    closed_snap = snapshot(tools(getWeatherForecast={"allowed_roles": ("finance",)}))
    first = kept_policy_codes(open_snap, request)
    assert (first == policy_codes(open_snap, request)).all()
    assert kept_policy_codes(open_snap, request) is first  # kept
    other = kept_policy_codes(closed_snap, request)
    assert (other == policy_codes(closed_snap, request)).all()
    assert (other != first).any()  # a new snapshot is never answered from the old
    assert not first.flags.writeable
