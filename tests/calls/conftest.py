"""A real upstream MCP server (tests/upstream.py) as a catalog's source, its tools
made catalog tools linked to it, as a sync would make them."""

from __future__ import annotations

from typing import Any

import pytest

from catalog.models import Catalog, Tool
from catalog.services import ensure_default_catalog
from sources.models import Source, SourceTool
from sources.secrets import encrypt_headers
from tests.factories import make_tool
from tests.upstream import Upstream


@pytest.fixture
def upstream(module_upstream: Upstream) -> Upstream:
    """The module's upstream, its calls forgotten and its tools as at first."""
    with module_upstream.lock:
        module_upstream.calls.clear()
        module_upstream.required_headers.clear()
    return module_upstream


def link_source(
    upstream: Upstream,
    catalog: Catalog | None = None,
    name: str = "weather",
    headers: dict[str, str] | None = None,
    **fields: Any,
) -> dict[str, Tool]:
    """A source for ``upstream`` and a catalog tool per upstream tool, named
    ``<source>.<tool>``: read-only tools need no approval, the others do."""
    catalog = catalog or ensure_default_catalog()
    source = Source.objects.create(
        catalog=catalog,
        name=name,
        url=upstream.url,
        headers_encrypted=encrypt_headers(headers or {}),
        **fields,
    )
    tools = {}
    for upstream_name, definition in upstream.tools.items():
        hints = (
            definition.annotations.model_dump(by_alias=True, exclude_none=True)
            if definition.annotations
            else {}
        )
        tool = make_tool(
            catalog,
            f"{name}.{upstream_name}",
            description=definition.description,
            parameters=definition.input_schema,
            annotations=hints,
            requires_approval=hints.get("readOnlyHint") is not True,
        )
        SourceTool.objects.create(
            source=source,
            tool=tool,
            upstream_name=upstream_name,
            upstream=definition.model_dump(by_alias=True, exclude_none=True),
        )
        tools[upstream_name] = tool
    return tools


@pytest.fixture
def linked(upstream: Upstream, db: None) -> dict[str, Tool]:
    return link_source(upstream)
