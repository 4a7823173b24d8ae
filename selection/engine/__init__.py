"""Quiver's selection engine: pickTools in pure Python (no Django, no I/O).

    snapshot = CatalogSnapshot("acme", "v7", tools, EngineSettings())
    result = select(snapshot, SelectionRequest(query="weather in Paris"),
                    semantic={"get_weather": 0.71, ...}, llm=None)

See ``engine.select`` for the pipeline and ``types`` for the value types.
"""

from selection.engine.engine import RequestError, select
from selection.engine.normalize import NormalizedQuery, normalize
from selection.engine.records import param_text, record_from_dict
from selection.engine.scorers.llm import build_prompt, parse_answer, sanitize_name
from selection.engine.settings import (
    SCORERS,
    EngineSettings,
    MicroAnchor,
    SettingsError,
)
from selection.engine.snapshot import CatalogSnapshot
from selection.engine.types import (
    Exclusion,
    Pick,
    SelectionRequest,
    SelectionResult,
    SelectionStats,
    SemanticScores,
    ToolRecord,
)

__all__ = [
    "SCORERS",
    "CatalogSnapshot",
    "EngineSettings",
    "Exclusion",
    "MicroAnchor",
    "NormalizedQuery",
    "Pick",
    "RequestError",
    "SelectionRequest",
    "SelectionResult",
    "SelectionStats",
    "SemanticScores",
    "SettingsError",
    "ToolRecord",
    "build_prompt",
    "normalize",
    "param_text",
    "parse_answer",
    "record_from_dict",
    "sanitize_name",
    "select",
]
