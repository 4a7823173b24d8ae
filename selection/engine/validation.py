"""Range checks for ``EngineSettings``; every message is keyed by its field path."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from selection.engine.settings import EngineSettings

HYBRID_KEYS = ("embed", "lexical", "bm25f", "tag", "name", "category")
ENSEMBLE_KEYS = ("bm25f", "focus", "transition", "sticky", "avoid")
FIELD_KEYS = (
    "name",
    "title",
    "keywords",
    "examples",
    "description",
    "category",
    "tags",
    "params",
    "avoid_when",
)


def _in_range(
    errors: dict[str, str], path: str, value: float, low: float, high: float
) -> None:
    """Record ``path`` when ``value`` is outside ``low..high``."""
    if not low <= value <= high:
        errors[path] = f"must be between {low:g} and {high:g}"


def _weights(
    errors: dict[str, str],
    name: str,
    weights: Mapping[str, float],
    keys: tuple[str, ...],
    high: float,
) -> None:
    """Known keys only, each weight within ``0..high``."""
    for key, value in weights.items():
        if key not in keys:
            errors[f"{name}.{key}"] = "is not a known weight"
        else:
            _in_range(errors, f"{name}.{key}", value, 0.0, high)


def _anchors(errors: dict[str, str], settings: EngineSettings) -> None:
    """Every micro-anchor regex compiles, names tools and has a sane boost."""
    for i, anchor in enumerate(settings.micro_anchors):
        path = f"micro_anchors[{i}]"
        try:
            re.compile(anchor.pattern)
        except re.error as exc:
            errors[f"{path}.pattern"] = f"is not a valid regular expression ({exc})"
        if not anchor.tools:
            errors[f"{path}.tools"] = "must name at least one tool"
        _in_range(errors, f"{path}.boost", anchor.boost, 0.0, 5.0)


def _transitions(errors: dict[str, str], settings: EngineSettings) -> None:
    """Transition probabilities are within 0..1."""
    for src, row in settings.transitions.items():
        for dst, p in row.items():
            _in_range(errors, f"transitions.{src}.{dst}", p, 0.0, 1.0)


def _scalars(errors: dict[str, str], s: EngineSettings) -> None:
    """The single-number settings."""
    from selection.engine.settings import NO_SCHEMA_MODES, SCORERS

    if s.default_scorer not in SCORERS:
        errors["default_scorer"] = f"must be one of {', '.join(SCORERS)}"
    _in_range(errors, "min_lexical_overlap", s.min_lexical_overlap, 0, 50)
    _in_range(errors, "min_combined_score", s.min_combined_score, 0.0, 1.0)
    _in_range(errors, "candidate_pool", s.candidate_pool, 1, 1000)
    _in_range(errors, "bm25_k1", s.bm25_k1, 0.0, 3.0)
    _in_range(errors, "bm25_b", s.bm25_b, 0.0, 1.0)
    if s.category_confidence_threshold is not None:
        _in_range(
            errors,
            "category_confidence_threshold",
            s.category_confidence_threshold,
            0.0,
            1.0,
        )
    _in_range(errors, "exploration_depth", s.exploration_depth, 2, 200)
    _in_range(errors, "llm_shortlist", s.llm_shortlist, 1, 500)
    _in_range(errors, "lexical_floor", s.lexical_floor, 0.0, 1.0)
    _in_range(errors, "semantic_floor", s.semantic_floor, -1.0, 1.0)
    _in_range(errors, "semantic_ceiling", s.semantic_ceiling, -1.0, 1.0)
    _in_range(errors, "lexical_confidence_floor", s.lexical_confidence_floor, 0.0, 1.0)
    _in_range(
        errors, "lexical_confidence_ceiling", s.lexical_confidence_ceiling, 0.0, 1.0
    )
    if s.lexical_confidence_ceiling <= s.lexical_confidence_floor:
        errors["lexical_confidence_ceiling"] = "must be above lexical_confidence_floor"
    if s.semantic_ceiling <= s.semantic_floor:
        errors["semantic_ceiling"] = "must be above semantic_floor"
    for i, mode in enumerate(s.no_schema_modes_allowed):
        if mode not in NO_SCHEMA_MODES:
            errors[f"no_schema_modes_allowed[{i}]"] = (
                f"must be one of {', '.join(NO_SCHEMA_MODES)}"
            )


def validate_settings(settings: EngineSettings) -> dict[str, str]:
    """All problems with ``settings`` as field path -> message."""
    errors: dict[str, str] = {}
    _scalars(errors, settings)
    _weights(errors, "hybrid_weights", settings.hybrid_weights, HYBRID_KEYS, 1.0)
    _weights(errors, "ensemble_weights", settings.ensemble_weights, ENSEMBLE_KEYS, 1.0)
    _weights(errors, "field_weights", settings.field_weights, FIELD_KEYS, 10.0)
    if sum(settings.hybrid_weights.values()) <= 0:
        errors.setdefault("hybrid_weights", "at least one weight must be above 0")
    _anchors(errors, settings)
    _transitions(errors, settings)
    return errors
