"""Per-catalog engine settings that a curator may edit, with validation.

``EngineSettings`` is frozen; ``from_dict`` merges a partial JSON object onto the
defaults, ``to_dict`` gives the full JSON back, and ``validate`` returns problems
keyed by field path (``hybrid_weights.embed``, ``micro_anchors[2].pattern``) so a
form can put each message next to its field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from functools import lru_cache
from typing import Any

import re2

from screening.policy import PolicyError, ScreeningPolicy

SCORERS = ("keyword", "bm25f", "embedding", "hybrid", "ensemble", "llm")
NO_SCHEMA_MODES = ("read-only", "human-approval", "full")

DEFAULT_HYBRID_WEIGHTS = {
    "embed": 0.6,
    "lexical": 0.3,
    "bm25f": 0.1,
    "tag": 0.0,
    "name": 0.1,
    "category": 0.0,
}
# The name, description and parameters count alike: weighting the name 3x and
# parameters 0.5x lost NDCG@10 on all three dev sets as a lexical ranker and in
# the hybrid (bench/README.md, "No history: a fusion chosen from the catalog").
DEFAULT_FIELD_WEIGHTS = {
    "name": 1.0,
    "title": 0.5,
    "keywords": 1.0,
    "examples": 1.0,
    "description": 1.0,
    "category": 0.5,
    "tags": 0.5,
    "params": 1.0,
    "avoid_when": 0.3,
}
DEFAULT_ENSEMBLE_WEIGHTS = {
    "bm25f": 0.40,
    "focus": 0.15,
    "transition": 0.15,
    "sticky": 0.10,
    "avoid": 0.20,
}


class SettingsError(ValueError):
    """Settings that cannot be built; ``errors`` maps field paths to messages."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(f"{k}: {v}" for k, v in sorted(errors.items())))
        self.errors = errors


@dataclass(frozen=True)
class MicroAnchor:
    """A regex over the query that adds ``boost`` to the listed tools (seed 004)."""

    pattern: str
    tools: tuple[str, ...]
    boost: float = 1.0


@dataclass(frozen=True)
class EngineSettings:
    """How one catalog ranks tools. Defaults are meant to work for any catalog."""

    default_scorer: str = "hybrid"
    hybrid_weights: Mapping[str, float] = field(
        default_factory=lambda: dict(DEFAULT_HYBRID_WEIGHTS)
    )
    min_lexical_overlap: int = 0
    min_combined_score: float = 0.0
    candidate_pool: int = 50
    bm25_k1: float = 1.2
    bm25_b: float = 0.75
    field_weights: Mapping[str, float] = field(
        default_factory=lambda: dict(DEFAULT_FIELD_WEIGHTS)
    )
    ensemble_weights: Mapping[str, float] = field(
        default_factory=lambda: dict(DEFAULT_ENSEMBLE_WEIGHTS)
    )
    micro_anchors: tuple[MicroAnchor, ...] = ()
    transitions: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    core_tools: tuple[str, ...] = ()
    category_confidence_threshold: float | None = 0.9
    exploration: bool = False
    exploration_seed: int = 0
    exploration_depth: int = 20
    no_schema_modes_allowed: tuple[str, ...] = ("read-only",)
    llm_shortlist: int = 40
    llm_descriptions: bool = True
    lexical_floor: float = 0.15
    # Best pool cosine (all-MiniLM-L6-v2) at which a request starts / stops looking
    # like it needs a tool: under 0.21 lie 0.5% of correctly answered MetaTool
    # requests and 25% of its no-tool ones; 0.41 is ~ the no-tool 95th percentile.
    semantic_floor: float = 0.21
    semantic_ceiling: float = 0.41
    lexical_confidence_floor: float = 0.35
    lexical_confidence_ceiling: float = 0.80
    # No tool fits a request whose best score is under this (0: off); learning
    # calibrates it from the catalog's labelled no-tool requests.
    no_tool_threshold: float = 0.0
    # The applied learnt model (learning.models.LearntModel id), if any.
    learnt_model: int | None = None
    # The hybrid's BM25F weight is the one the catalog's own texts call for
    # (selection.engine.fusion) instead of ``hybrid_weights.bm25f``.
    auto_fusion: bool = True
    # How far a tool is pulled towards its name family's best score (0: off).
    family_pull: float = 0.5
    # For a request of several sentences: how much near-duplicates of a tool
    # ranked above are moved down (selection.engine.diversity; 0: off).
    diversity: float = 0.2
    # The catalog's trust policy (screening.policy): when definitions wait for
    # review, what happens to a flagged result. Not read by the engine; kept
    # here so it is versioned, audited and restored with the other settings.
    trust: Mapping[str, Any] = field(
        default_factory=lambda: ScreeningPolicy().to_dict()
    )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> EngineSettings:
        """Defaults overridden by ``data``; unknown keys or wrong shapes raise."""
        if not data:
            return cls()
        known = {f.name for f in fields(cls)}
        errors = {k: "is not a known setting" for k in data if k not in known}
        if errors:
            raise SettingsError(errors)
        values: dict[str, Any] = {}
        for key, value in data.items():
            try:
                values[key] = _coerce(key, value, getattr(cls(), key))
            except SettingsError as exc:  # a section naming its own fields
                errors.update(exc.errors)
            except (TypeError, ValueError, KeyError) as exc:
                errors[key] = f"has the wrong shape ({exc})"
        if errors:
            raise SettingsError(errors)
        return replace(cls(), **values)

    def to_dict(self) -> dict[str, Any]:
        """The full settings as plain JSON-ready data."""
        data = asdict(self)
        for key in ("hybrid_weights", "field_weights", "ensemble_weights"):
            data[key] = dict(getattr(self, key))
        data["transitions"] = {k: dict(v) for k, v in self.transitions.items()}
        data["trust"] = ScreeningPolicy.from_dict(self.trust).to_dict()
        data["micro_anchors"] = [
            {"pattern": a.pattern, "tools": list(a.tools), "boost": a.boost}
            for a in self.micro_anchors
        ]
        for key in ("core_tools", "no_schema_modes_allowed"):
            data[key] = list(getattr(self, key))
        return data

    def validate(self) -> dict[str, str]:
        """Field path -> message for every value out of range (empty when valid)."""
        return validate_settings(self)

    def hybrid_weight(self, name: str) -> float:
        """One hybrid weight (0 when the curator left it out)."""
        return float(self.hybrid_weights.get(name, 0.0))

    def ensemble_weight(self, name: str) -> float:
        """One ensemble weight (0 when the curator left it out)."""
        return float(self.ensemble_weights.get(name, 0.0))


def _coerce(key: str, value: Any, default: Any) -> Any:
    """Turn JSON ``value`` into the type of the setting whose default is given."""
    if key == "trust":
        try:
            return ScreeningPolicy.from_dict(value).to_dict()
        except PolicyError as exc:
            raise SettingsError(exc.errors) from exc
    if key == "micro_anchors":
        return tuple(
            MicroAnchor(
                pattern=str(a["pattern"]),
                tools=tuple(str(t) for t in a.get("tools", ())),
                boost=float(a.get("boost", 1.0)),
            )
            for a in value
        )
    if key == "transitions":
        return {
            str(src): {str(dst): float(p) for dst, p in dict(row).items()}
            for src, row in dict(value).items()
        }
    if isinstance(default, Mapping):
        return {str(k): float(v) for k, v in dict(value).items()}
    if isinstance(default, tuple):
        if isinstance(value, str):
            raise TypeError("expected a list")
        return tuple(str(v) for v in value)
    return _coerce_scalar(key, value, default)


def _coerce_scalar(key: str, value: Any, default: Any) -> Any:
    """Numbers, booleans and strings; ``None`` only where the default allows it."""
    if key == "learnt_model":
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError("expected an integer id or null")
        return value
    if value is None:
        if key == "category_confidence_threshold":
            return None
        raise TypeError("must not be null")
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise TypeError("expected true or false")
        return value
    if isinstance(default, int) and not isinstance(default, bool):
        if isinstance(value, bool) or float(value) != int(value):
            raise TypeError("expected an integer")
        return int(value)
    if isinstance(default, float) or key == "category_confidence_threshold":
        number = float(value)
        if not math.isfinite(number):
            raise ValueError("must be finite")
        return number
    return str(value)


@lru_cache(maxsize=1024)
def _compile_linear(pattern: str) -> Any:
    options = re2.Options()
    options.case_sensitive = False
    options.log_errors = False
    return re2.compile(pattern, options)


def compile_anchor(anchor: MicroAnchor) -> Any:
    """The anchor's regex, case-insensitive, matched by RE2 in time linear in the
    query (a curator's pattern must never stall a selection)."""
    return _compile_linear(anchor.pattern)


# Validation: range checks, every message keyed by its field path ------------------

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
WEIGHT_KEYS = {
    "hybrid_weights": HYBRID_KEYS,
    "ensemble_weights": ENSEMBLE_KEYS,
    "field_weights": FIELD_KEYS,
}


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
            _compile_linear(anchor.pattern)
        except re2.error as exc:
            errors[f"{path}.pattern"] = (
                "is not a regular expression with a linear-time match "
                f"(no lookaround or backreferences; {exc})"
            )
        if not anchor.tools:
            errors[f"{path}.tools"] = "must name at least one tool"
        _in_range(
            errors, f"{path}.boost", anchor.boost, *WEIGHT_RANGES["micro_anchors.boost"]
        )


def _transitions(errors: dict[str, str], settings: EngineSettings) -> None:
    """Transition probabilities are within 0..1."""
    for src, row in settings.transitions.items():
        for dst, p in row.items():
            low, high = WEIGHT_RANGES["transitions"]
            _in_range(errors, f"transitions.{src}.{dst}", p, low, high)


# The inclusive range of every single-number setting (forms show the same).
RANGES: dict[str, tuple[float, float]] = {
    "min_lexical_overlap": (0, 50),
    "min_combined_score": (0.0, 1.0),
    "candidate_pool": (1, 1000),
    "bm25_k1": (0.0, 3.0),
    "bm25_b": (0.0, 1.0),
    "category_confidence_threshold": (0.0, 1.0),
    "exploration_depth": (2, 200),
    "llm_shortlist": (1, 500),
    "lexical_floor": (0.0, 1.0),
    "no_tool_threshold": (0.0, 1.0),
    "family_pull": (0.0, 1.0),
    "diversity": (0.0, 1.0),
    "semantic_floor": (-1.0, 1.0),
    "semantic_ceiling": (-1.0, 1.0),
    "lexical_confidence_floor": (0.0, 1.0),
    "lexical_confidence_ceiling": (0.0, 1.0),
}
# The inclusive range of each weight of a mapping, of an anchor's boost and of a
# transition probability.
WEIGHT_RANGES: dict[str, tuple[float, float]] = {
    "hybrid_weights": (0.0, 1.0),
    "ensemble_weights": (0.0, 1.0),
    "field_weights": (0.0, 10.0),
    "micro_anchors.boost": (0.0, 5.0),
    "transitions": (0.0, 1.0),
}


def _scalars(errors: dict[str, str], s: EngineSettings) -> None:
    """The single-number settings."""
    if s.default_scorer not in SCORERS:
        errors["default_scorer"] = f"must be one of {', '.join(SCORERS)}"
    for name, (low, high) in RANGES.items():
        value = getattr(s, name)
        if value is not None:  # only category_confidence_threshold may be None
            _in_range(errors, name, value, low, high)
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
    for name, keys in WEIGHT_KEYS.items():
        _weights(errors, name, getattr(settings, name), keys, WEIGHT_RANGES[name][1])
    if sum(settings.hybrid_weights.values()) <= 0:
        errors.setdefault("hybrid_weights", "at least one weight must be above 0")
    _anchors(errors, settings)
    _transitions(errors, settings)
    return errors
