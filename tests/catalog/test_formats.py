"""Translation between ToolSpec and provider formats: shapes, detection, round trips."""

from __future__ import annotations

import copy
import json
import math
import re
from decimal import Decimal
from typing import Any

import pytest

from catalog.formats import (
    FORMATS,
    FormatError,
    ImportItem,
    detect_format,
    estimate_prompt_tokens,
    export_tool,
    export_tools,
    import_tools,
)
from catalog.spec import ToolSpec

SAFE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
EMPTY_OBJECT = {"type": "object", "properties": {}}

WEATHER_SCHEMA = {
    "type": "object",
    "required": ["city"],
    "properties": {"city": {"type": "string", "description": "The name of the city"}},
}


def weather() -> ToolSpec:
    return ToolSpec("get_weather", "Current weather.", copy.deepcopy(WEATHER_SCHEMA))


def nested_order() -> ToolSpec:
    return ToolSpec(
        name="place_order",
        description="Place an order for catalog items.",
        strict=True,
        parameters={
            "type": "object",
            "required": ["lines", "priority"],
            "additionalProperties": False,
            "properties": {
                "lines": {"type": "array", "items": {"$ref": "#/$defs/line"}},
                "priority": {"enum": ["low", "normal", "rush"]},
            },
            "$defs": {
                "line": {
                    "type": "object",
                    "required": ["sku", "qty"],
                    "additionalProperties": False,
                    "properties": {
                        "sku": {"type": "string"},
                        "qty": {"type": "integer", "minimum": 1},
                    },
                }
            },
        },
        tags=["orders"],
        cost_per_call=Decimal("0.0025"),
    )


def screenshot() -> ToolSpec:
    return ToolSpec(
        name="Website Screenshot or Thumbnail_/capture",
        title="Screenshot",
        description="Capture a page.",
        strict=False,
        parameters={"type": "object", "properties": {"url": {"type": "string"}}},
    )


def unsafe_mcp_tool() -> ToolSpec:
    return ToolSpec(
        name="drop_table",
        title="Drop table",
        description="Delete a database table.",
        parameters={"type": "object", "properties": {"table": {"type": "string"}}},
        safe=False,
        risk_level="high",
        capabilities=["read-only"],
        annotations={"openWorldHint": False, "idempotentHint": True},
    )


def no_schema_tool() -> ToolSpec:
    return ToolSpec(name="ping", allow_no_schema=True, no_schema_mode="read-only")


def renamed_tool() -> ToolSpec:
    return ToolSpec(
        name="Search / Web",
        provider_name="search_web_2",
        description="Search the web.",
        parameters={"type": "object", "properties": {"q": {"type": "string"}}},
        annotations={"title": "Web search"},
    )


def specs() -> list[ToolSpec]:
    """Fresh specs covering $defs, enums, strict true/false/None, unsafe MCP tools,
    a no-schema tool and an assigned provider name."""
    makers = (weather, nested_order, screenshot, unsafe_mcp_tool, no_schema_tool)
    return [make() for make in (*makers, renamed_tool)]


def good_specs(items: list[ImportItem]) -> list[ToolSpec]:
    assert [item.error for item in items] == [None] * len(items)
    return [item.spec for item in items if item.spec is not None]


def test_the_supported_formats_are_listed() -> None:
    expected = "canonical openai openai-responses anthropic ollama mcp"
    assert expected.split() == list(FORMATS)


def test_openai_export_wraps_the_schema_in_a_function() -> None:
    assert export_tool(weather(), "openai") == {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather.",
            "parameters": WEATHER_SCHEMA,
        },
    }


def test_strict_is_exported_only_when_set_including_false() -> None:
    assert "strict" not in export_tool(weather(), "openai")["function"]
    assert export_tool(nested_order(), "openai")["function"]["strict"] is True
    assert export_tool(screenshot(), "openai")["function"]["strict"] is False
    assert export_tool(screenshot(), "openai-responses")["strict"] is False
    assert "strict" not in export_tool(nested_order(), "ollama")["function"]


def test_responses_anthropic_and_ollama_exports_have_their_own_shapes() -> None:
    spec = nested_order()
    assert export_tool(spec, "openai-responses") == {
        "type": "function",
        "name": "place_order",
        "description": spec.description,
        "parameters": spec.parameters,
        "strict": True,
    }
    assert export_tool(spec, "anthropic") == {
        "name": "place_order",
        "description": spec.description,
        "input_schema": spec.parameters,
    }
    assert export_tool(spec, "ollama") == {
        "type": "function",
        "function": {
            "name": "place_order",
            "description": spec.description,
            "parameters": spec.parameters,
        },
    }


def test_canonical_export_is_the_spec_dictionary() -> None:
    spec = renamed_tool()
    exported = export_tool(spec, "canonical")
    assert exported == spec.to_dict()
    assert exported["name"] == "Search / Web"
    assert exported["provider_name"] == "search_web_2"


def test_export_never_shares_or_rewrites_the_canonical_schema() -> None:
    spec = nested_order()
    stored = copy.deepcopy(spec.parameters)
    for fmt in FORMATS:
        exported = export_tool(spec, fmt)
        schema = _schema_of(exported, fmt)
        assert schema == stored
        assert schema is not spec.parameters
        schema["$defs"]["line"]["properties"]["qty"]["minimum"] = 99
        assert spec.parameters == stored


def _schema_of(exported: dict[str, Any], fmt: str) -> Any:
    if fmt in ("openai", "ollama"):
        return exported["function"]["parameters"]
    key = {"anthropic": "input_schema", "mcp": "inputSchema"}.get(fmt, "parameters")
    return exported[key]


def test_provider_formats_use_the_provider_name_or_a_safe_form_of_the_name() -> None:
    for fmt in FORMATS[1:]:
        assert _name_of(export_tool(renamed_tool(), fmt), fmt) == "search_web_2"
        name = _name_of(export_tool(screenshot(), fmt), fmt)
        assert name == "Website_Screenshot_or_Thumbnail_capture"
        assert SAFE.fullmatch(name)


def _name_of(exported: dict[str, Any], fmt: str) -> str:
    if fmt in ("openai", "ollama"):
        return str(exported["function"]["name"])
    return str(exported["name"])


def test_a_no_schema_tool_gets_an_empty_object_schema_in_provider_formats() -> None:
    for fmt in FORMATS[1:]:
        assert _schema_of(export_tool(no_schema_tool(), fmt), fmt) == EMPTY_OBJECT
    assert export_tool(no_schema_tool(), "canonical")["parameters"] is None


def test_export_tools_builds_each_formats_document() -> None:
    tools = [weather(), screenshot()]
    canonical = export_tools(tools, "canonical")
    assert isinstance(canonical, dict)
    assert (canonical["format"], canonical["version"]) == ("quiver", 1)
    assert [tool["name"] for tool in canonical["tools"]] == [t.name for t in tools]
    mcp = export_tools(tools, "mcp")
    assert isinstance(mcp, dict)
    assert list(mcp) == ["tools"]
    assert len(mcp["tools"]) == 2
    for fmt in ("openai", "openai-responses", "anthropic", "ollama"):
        document = export_tools(tools, fmt)
        assert isinstance(document, list)
        assert len(document) == 2


def test_an_unknown_format_name_is_refused() -> None:
    with pytest.raises(FormatError, match="unknown format"):
        export_tool(weather(), "gemini")
    with pytest.raises(FormatError, match="unknown format"):
        import_tools([], "gemini")


def test_an_unsafe_tool_with_read_only_capability_exports_as_destructive_only() -> None:
    # A definition never says read-only and destructive at once: unsafe wins.
    exported = export_tool(unsafe_mcp_tool(), "mcp")
    assert exported["title"] == "Drop table"
    assert exported["annotations"] == {
        "openWorldHint": False,
        "idempotentHint": True,
        "title": "Drop table",
        "destructiveHint": True,
    }


@pytest.mark.parametrize(
    ("safe", "capabilities", "stored"),
    [
        (False, [], {"readOnlyHint": True}),
        (False, ["read-only"], {"readOnlyHint": True, "destructiveHint": False}),
        (True, ["read-only"], {"destructiveHint": True}),
        (True, [], {"readOnlyHint": True, "destructiveHint": True}),
    ],
)
def test_an_mcp_definition_is_never_read_only_and_destructive_at_once(
    safe: bool, capabilities: list[str], stored: dict[str, bool]
) -> None:
    spec = unsafe_mcp_tool()
    spec.safe, spec.capabilities, spec.annotations = safe, capabilities, stored
    hints = export_tool(spec, "mcp")["annotations"]
    assert hints["destructiveHint"] is True
    assert hints.get("readOnlyHint") is not True


def test_a_stored_destructive_hint_cannot_hide_an_unsafe_tool() -> None:
    spec = unsafe_mcp_tool()
    spec.annotations = {"destructiveHint": False}
    assert export_tool(spec, "mcp")["annotations"]["destructiveHint"] is True


def test_a_safe_tool_without_annotations_exports_none_to_mcp() -> None:
    exported = export_tool(weather(), "mcp")
    assert exported == {
        "name": "get_weather",
        "description": "Current weather.",
        "inputSchema": WEATHER_SCHEMA,
    }


def test_a_destructive_mcp_tool_imports_as_unsafe_with_high_risk() -> None:
    document = {
        "tools": [
            {
                "name": "rm",
                "description": "Remove files.",
                "inputSchema": {"type": "object"},
                "annotations": {"destructiveHint": True, "readOnlyHint": False},
            }
        ]
    }
    [item] = import_tools(document)
    assert item.spec is not None
    assert (item.spec.safe, item.spec.risk_level) == (False, "high")
    assert item.spec.annotations == {"readOnlyHint": False}


def test_mcp_read_only_and_other_hints_are_kept_in_annotations() -> None:
    annotations = {"readOnlyHint": True, "openWorldHint": True, "x-vendor": [1]}
    tool = {"name": "ls", "inputSchema": {"type": "object"}, "annotations": annotations}
    [item] = import_tools({"tools": [tool]}, "mcp")
    assert item.spec is not None
    assert item.spec.safe is True
    assert item.spec.risk_level == "low"
    assert item.spec.annotations == annotations
    assert export_tool(item.spec, "mcp")["annotations"] == annotations


def test_an_mcp_title_comes_from_the_tool_or_its_annotations() -> None:
    tools = [
        {"name": "a", "title": "Alpha", "inputSchema": {"type": "object"}},
        {
            "name": "b",
            "inputSchema": {"type": "object"},
            "annotations": {"title": "Beta"},
        },
    ]
    items = import_tools({"tools": tools}, "mcp")
    assert [spec.title for spec in good_specs(items)] == ["Alpha", "Beta"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_exported_document_is_detected(fmt: str) -> None:
    expected = "openai" if fmt == "ollama" else fmt  # the two shapes are identical
    assert detect_format(export_tools(specs(), fmt)) == expected


def test_wrapped_and_bare_variants_are_detected() -> None:
    canonical_items = [weather().to_dict()]
    openai_items = export_tools([weather()], "openai")
    anthropic_items = export_tools([weather()], "anthropic")
    mcp_tools = export_tools([weather()], "mcp")
    assert detect_format(canonical_items) == "canonical"
    assert detect_format({"model": "gpt", "tools": openai_items}) == "openai"
    assert detect_format({"tools": anthropic_items}) == "anthropic"
    assert detect_format({"jsonrpc": "2.0", "id": 1, "result": mcp_tools}) == "mcp"


@pytest.mark.parametrize(
    "document",
    [
        "get_weather",
        42,
        {"functions": []},
        {"tools": "all of them"},
        [1, 2, 3],
        [{"colour": "blue"}],
        {"format": "other", "tools": []},
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32601}},
        {"jsonrpc": "2.0", "id": 1, "result": {}},
    ],
)
def test_an_unknown_shape_raises_a_format_error(document: Any) -> None:
    with pytest.raises(FormatError):
        import_tools(document)


def test_an_unsupported_canonical_version_is_refused() -> None:
    with pytest.raises(FormatError, match="version"):
        import_tools({"format": "quiver", "version": 2, "tools": []})


def test_a_document_that_does_not_fit_the_requested_format_is_refused() -> None:
    jsonrpc = {"jsonrpc": "2.0", "result": {"tools": []}}
    with pytest.raises(FormatError):
        import_tools(jsonrpc, "openai")
    with pytest.raises(FormatError):
        import_tools({"format": "quiver", "version": 1, "tools": []}, "mcp")


def test_bad_items_are_reported_by_index_field_and_rule_while_good_ones_pass() -> None:
    good = export_tool(weather(), "openai")
    document = {
        "tools": [
            good,
            {"type": "function", "function": {"description": "no name"}},
            {"type": "function"},
            {"type": "function", "function": {"name": "x", "parameters": "oops"}},
            "not a tool",
            {"type": "function", "function": {"name": "y", "strict": "yes"}},
            {"type": "code_interpreter"},
            good,
        ]
    }
    items = import_tools(document, "openai")
    assert [item.index for item in items] == list(range(8))
    assert [item.error for item in items] == [
        None,
        "tools[1].function.name: is required",
        "tools[2].function: is required",
        "tools[3].function.parameters: must be a JSON object (a JSON Schema)",
        "tools[4]: must be a JSON object",
        "tools[5].function.strict: must be true, false or null",
        "tools[6].type: must be \"function\", not 'code_interpreter'",
        None,
    ]
    assert items[0].spec == items[7].spec == _plain(weather())


def _plain(spec: ToolSpec) -> ToolSpec:
    """What a provider format can carry of ``spec``."""
    return ToolSpec(
        name=spec.name,
        description=spec.description,
        parameters=spec.parameters,
        strict=spec.strict,
    )


def test_provider_specific_required_fields_are_enforced() -> None:
    anthropic = import_tools(
        [{"name": "a"}, {"type": "web_search_20250305", "name": "web_search"}],
        "anthropic",
    )
    assert [item.error for item in anthropic] == [
        "tools[0].input_schema: is required",
        "tools[1].type: 'web_search_20250305' is not a client tool",
    ]
    mcp = import_tools({"tools": [{"name": "", "inputSchema": {}}, {"name": "b"}]})
    assert [item.error for item in mcp] == [
        "tools[0].name: must not be empty",
        "tools[1].inputSchema: is required",
    ]
    responses = import_tools([{"type": "function", "name": 7}], "openai-responses")
    assert [item.error for item in responses] == ["tools[0].name: must be a string"]


def test_canonical_items_are_checked_field_by_field() -> None:
    document = {
        "format": "quiver",
        "version": 1,
        "tools": [
            weather().to_dict(),
            {"name": "x", "colour": "blue"},
            {"description": "no name"},
            {"name": "y", "safe": "no"},
        ],
    }
    items = import_tools(document)
    assert [item.error for item in items] == [
        None,
        "tools[1].colour: is not a known tool field",
        "tools[2].name: is required",
        "tools[3].safe: must be true or false",
    ]


def test_imported_specs_do_not_share_objects_with_the_document() -> None:
    document = export_tools([nested_order(), unsafe_mcp_tool()], "mcp")
    original = copy.deepcopy(document)
    imported = good_specs(import_tools(document))
    assert isinstance(document, dict)
    assert isinstance(original, dict)
    document["tools"][0]["inputSchema"]["properties"].clear()
    document["tools"][1]["annotations"]["openWorldHint"] = True
    assert imported[0].parameters == original["tools"][0]["inputSchema"]
    assert imported[1].annotations["openWorldHint"] is False


def test_importing_a_canonical_document_gives_back_equal_specs() -> None:
    originals = specs()
    assert good_specs(import_tools(export_tools(originals, "canonical"))) == originals


@pytest.mark.parametrize("fmt", FORMATS)
def test_export_then_import_then_export_again_is_stable(fmt: str) -> None:
    first = export_tools(specs(), fmt)
    second = export_tools(good_specs(import_tools(first, fmt)), fmt)
    assert second == first


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_round_trip_also_holds_with_detected_formats(fmt: str) -> None:
    first = export_tools(specs(), fmt)
    text = json.dumps(first)
    second = export_tools(good_specs(import_tools(json.loads(text))), fmt)
    assert second == first


@pytest.mark.parametrize("fmt", FORMATS[1:])
def test_a_provider_round_trip_keeps_schema_strict_and_description(fmt: str) -> None:
    imported = good_specs(import_tools(export_tools(specs(), fmt), fmt))
    for original, back in zip(specs(), imported, strict=True):
        expected = original.parameters if original.parameters else EMPTY_OBJECT
        assert back.parameters == expected
        assert back.description == original.description
        if fmt in ("openai", "openai-responses"):
            assert back.strict is original.strict


def test_an_unsafe_tool_survives_an_mcp_round_trip_as_unsafe() -> None:
    [back] = good_specs(import_tools(export_tools([unsafe_mcp_tool()], "mcp")))
    assert back.safe is False
    assert back.title == "Drop table"
    assert back.annotations.get("readOnlyHint") is not True
    assert "destructiveHint" not in back.annotations


def test_the_token_estimate_follows_the_compact_openai_definition() -> None:
    spec = weather()
    compact = json.dumps(
        export_tool(spec, "openai"), separators=(",", ":"), ensure_ascii=False
    )
    assert estimate_prompt_tokens(spec) == math.ceil(len(compact) / 4) + 10


def test_a_bigger_schema_is_estimated_to_cost_more_tokens() -> None:
    small = weather()
    big = nested_order()
    assert estimate_prompt_tokens(big) > estimate_prompt_tokens(small) > 10
