"""Every write to the catalog goes through a function of this package."""

from catalog.services.catalogs import create_catalog, ensure_default_catalog
from catalog.services.imports import preview_import, start_import
from catalog.services.tools import (
    ToolConflict,
    create_tool,
    delete_tool,
    set_tool_status,
    tool_to_spec,
    update_tool,
)

__all__ = [
    "ToolConflict",
    "create_catalog",
    "create_tool",
    "delete_tool",
    "ensure_default_catalog",
    "set_tool_status",
    "preview_import",
    "start_import",
    "tool_to_spec",
    "update_tool",
]
