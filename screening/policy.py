"""A catalog's trust policy: when tool definitions wait for review and what
happens to a result a detector flags.

Stored with the catalog's selection settings (their ``trust`` key: versioned,
audited, restorable like every setting); this module only reads and checks it.
``from_dict`` merges a partial object onto the defaults and names every bad
field (``trust.results.pii``: ...).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import re2

from screening.pii import BUILT_IN, Pattern, compiled
from screening.rules import RESULT_CLASSES

REVIEW_NEW_TOOLS = ("no", "after-first-sync", "always")
RISKY_CHANGE = ("keep-pinned", "suspend")
ACTIONS = ("redact", "flag", "block")
DEFAULT_RESULTS = {"secrets": "redact", "injection": "flag", "pii": "redact"}
MAX_PATTERNS = 50
MAX_PATTERN_CHARS = 500
PATTERN_NAME_CHARS = 40


class PolicyError(ValueError):
    """A policy that cannot be built; ``errors`` maps field paths to messages."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(f"{k}: {v}" for k, v in sorted(errors.items())))
        self.errors = errors


@dataclass(frozen=True)
class ScreeningPolicy:
    """What a catalog does with definitions and results.

    * ``review_new_tools``: a source's new tools wait for review ``no``ne of the
      time, ``after-first-sync`` (the first sync's are accepted), or ``always``;
    * ``risky_change``: an upstream change that widens the input schema or
      makes a hint less safe (``readOnlyHint`` dropped...) waits for review with
      the tool still serving its pinned definition (``keep-pinned``) or taken
      out of service until someone decides (``suspend``); every other change
      waits with the pinned definition served;
    * ``results``: per detector class (secrets, injection, pii), ``redact`` the
      match, ``flag`` it (the answer says which parts are untrusted and why) or
      ``block`` the whole result;
    * ``pii_rules``: the built-in personal-data rules turned on (none by default);
      ``pii_patterns``: the catalog's own, named RE2 patterns."""

    review_new_tools: str = "no"
    risky_change: str = "suspend"
    results: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_RESULTS))
    pii_rules: tuple[str, ...] = ()
    pii_patterns: tuple[Pattern, ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> ScreeningPolicy:
        """The defaults overridden by ``data``; a PolicyError names every bad field."""
        if not data:
            return cls()
        if not isinstance(data, Mapping):
            raise PolicyError({"trust": "must be an object"})
        errors: dict[str, str] = {}
        known = ("review_new_tools", "risky_change", "results", "pii_rules")
        for key in data:
            if key not in (*known, "pii_patterns"):
                errors[f"trust.{key}"] = "is not a known setting"
        values: dict[str, Any] = {}
        for key, choices in (
            ("review_new_tools", REVIEW_NEW_TOOLS),
            ("risky_change", RISKY_CHANGE),
        ):
            if key in data:
                values[key] = _choice(errors, f"trust.{key}", data[key], choices)
        if "results" in data:
            values["results"] = _results(errors, data["results"])
        if "pii_rules" in data:
            values["pii_rules"] = _pii_rules(errors, data["pii_rules"])
        if "pii_patterns" in data:
            values["pii_patterns"] = _patterns(errors, data["pii_patterns"])
        if errors:
            raise PolicyError(errors)
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return {
            "review_new_tools": self.review_new_tools,
            "risky_change": self.risky_change,
            "results": dict(self.results),
            "pii_rules": list(self.pii_rules),
            "pii_patterns": [
                {"name": rule.name, "pattern": rule.pattern}
                for rule in self.pii_patterns
            ],
        }

    def action(self, result_class: str) -> str:
        return self.results.get(result_class, DEFAULT_RESULTS[result_class])


def _choice(errors: dict[str, str], path: str, value: Any, choices: tuple) -> str:
    if value not in choices:
        errors[path] = f"must be one of {', '.join(choices)}"
        return str(choices[0])
    return str(value)


def _results(errors: dict[str, str], value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping):
        errors["trust.results"] = "must be an object of class: action"
        return dict(DEFAULT_RESULTS)
    results = dict(DEFAULT_RESULTS)
    for key, action in value.items():
        if key not in RESULT_CLASSES:
            errors[f"trust.results.{key}"] = (
                f"is not a detector class ({', '.join(RESULT_CLASSES)})"
            )
            continue
        results[key] = _choice(errors, f"trust.results.{key}", action, ACTIONS)
    return results


def _pii_rules(errors: dict[str, str], value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        errors["trust.pii_rules"] = "must be a list of rule names"
        return ()
    for index, name in enumerate(value):
        if name not in BUILT_IN:
            errors[f"trust.pii_rules[{index}]"] = (
                f"must be one of {', '.join(sorted(BUILT_IN))}"
            )
    return tuple(dict.fromkeys(value))


def _patterns(errors: dict[str, str], value: Any) -> tuple[Pattern, ...]:
    if not isinstance(value, list) or len(value) > MAX_PATTERNS:
        errors["trust.pii_patterns"] = (
            f"must be a list of at most {MAX_PATTERNS} {{name, pattern}} objects"
        )
        return ()
    found: list[Pattern] = []
    for index, item in enumerate(value):
        path = f"trust.pii_patterns[{index}]"
        rule = _pattern(errors, path, item)
        if rule is not None:
            if any(other.name == rule.name for other in found):
                errors[f"{path}.name"] = "is used by another pattern"
            found.append(rule)
    return tuple(found)


def _pattern(errors: dict[str, str], path: str, item: Any) -> Pattern | None:
    if not isinstance(item, Mapping) or set(item) != {"name", "pattern"}:
        errors[path] = "must be an object with exactly name and pattern"
        return None
    name, pattern = item["name"], item["pattern"]
    if (
        not isinstance(name, str)
        or not 0 < len(name) <= PATTERN_NAME_CHARS
        or not all(c.isascii() and (c.isalnum() or c in "-_") for c in name)
    ):
        errors[f"{path}.name"] = (
            f"1 to {PATTERN_NAME_CHARS} letters, digits, '-' and '_'"
        )
        return None
    if not isinstance(pattern, str) or not 0 < len(pattern) <= MAX_PATTERN_CHARS:
        errors[f"{path}.pattern"] = f"must be 1 to {MAX_PATTERN_CHARS} characters"
        return None
    try:
        matcher = compiled(pattern)
    except re2.error as exc:
        errors[f"{path}.pattern"] = (
            "is not a regular expression with a linear-time match (no lookaround "
            f"or backreferences; {exc})"
        )
        return None
    if matcher.search("") is not None:
        errors[f"{path}.pattern"] = "must not match empty text"
        return None
    return Pattern(name, pattern)
