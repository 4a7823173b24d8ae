"""Small hand-made catalogs for the engine tests (no Django, no database)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from selection.engine import CatalogSnapshot, EngineSettings, ToolRecord

BASE_TOOLS = [
    ToolRecord(
        id=1,
        name="getWeatherForecast",
        title="Weather forecast",
        description="Get the weather forecast for a city: temperature, rain, wind.",
        category="weather",
        tags=("weather", "forecast"),
        keywords=("forecast", "temperature"),
    ),
    ToolRecord(
        id=2,
        name="send_email",
        title="Send email",
        description="Send an email message to a recipient with a subject and body.",
        category="communication",
        tags=("email",),
    ),
    ToolRecord(
        id=3,
        name="searchWeb",
        title="Web search",
        description="Search the web for pages, news and articles about a topic.",
        category="search",
        tags=("search", "web"),
    ),
    ToolRecord(
        id=4,
        name="calculate",
        title="Calculator",
        description="Evaluate an arithmetic expression and return the number.",
        category="math",
    ),
    ToolRecord(
        id=5,
        name="createCalendarEvent",
        title="Create calendar event",
        description="Create an event in the user's calendar at a date and time.",
        category="calendar",
        tags=("calendar", "meeting"),
    ),
]


def tools(**overrides: dict[str, Any]) -> tuple[ToolRecord, ...]:
    """The base tools, positions in list order, with per-name field overrides."""
    out = []
    for position, tool in enumerate(BASE_TOOLS):
        changes = overrides.get(tool.name, {})
        out.append(replace(tool, position=position, **changes))
    return tuple(out)


def snapshot(
    records: tuple[ToolRecord, ...] | None = None, **settings: Any
) -> CatalogSnapshot:
    """A snapshot of ``records`` (default: the base tools) with settings overrides."""
    return CatalogSnapshot(
        catalog="test",
        version="1",
        tools=records if records is not None else tools(),
        settings=EngineSettings.from_dict(settings),
    )
