"""A catalog's selection settings as forms: grouped fields (each with its help,
default and range) and the raw JSON for power users. Both give the same full
settings to the same service; the engine's own validation decides, and each of
its messages is put on the input it names.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from catalog.forms import JSONTextField, parse_json_text
from selection.engine.settings import (
    WEIGHT_KEYS,
    WEIGHT_RANGES,
    EngineSettings,
    SettingsError,
)
from selection.forms.fields import (
    BLANK_ROWS,
    GROUPS,
    HELP,
    ROWS_MAX,
    ToolNames,
    is_integer,
    number_input,
    scalar_field,
    weight_name,
)


class SelectionSettingsForm(forms.Form):
    """A catalog's engine settings as one JSON object (the "raw JSON" view)."""

    settings = JSONTextField(
        rows=28,
        label="Settings (JSON)",
        help_text="Every setting with its effective value; keys left at their "
        "default are not stored, so later default changes still reach them.",
    )
    reason = forms.CharField(
        label="Reason (optional)",
        required=False,
        max_length=500,
        help_text="Kept with the version in the settings history and the audit log.",
    )

    def clean_settings(self) -> dict[str, Any]:
        value = parse_json_text(self.cleaned_data["settings"], "settings")
        if not isinstance(value, dict):
            raise ValidationError("settings: must be a JSON object")
        return value

    def settings_data(self) -> dict[str, Any]:
        """The full settings the form holds (valid forms only)."""
        return dict(self.cleaned_data["settings"])

    def changed_settings(self) -> dict[str, Any]:
        """Only the keys whose value differs from the engine's defaults."""
        return only_changed(self.settings_data())

    def add_service_error(self, exc: ValidationError) -> None:
        self.add_error("settings", exc.messages)


def only_changed(data: Mapping[str, Any]) -> dict[str, Any]:
    """Only the keys whose value differs from the engine's defaults."""
    defaults = EngineSettings().to_dict()
    return {
        key: value
        for key, value in data.items()
        if key not in defaults or _canonical(defaults[key]) != _canonical(value)
    }


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


ANCHOR = re.compile(r"anchor_(\d+)_pattern")
TRANSITION = re.compile(r"transition_(\d+)_p")
WEIGHT_PATH = re.compile(r"(\w+_weights)\.(\w+)")
ANCHOR_PATH = re.compile(r"micro_anchors\[(\d+)\]\.(\w+)")
ROW_FIELDS = {"micro_anchors", "transitions", "core_tools"}
KnownTools = Callable[[Iterable[str]], set[str]]


def _rows(data: Any, pattern: re.Pattern[str], existing: int) -> int:
    """How many rows the form carries: those posted (more than ``ROWS_MAX`` is
    refused in ``clean``), else the saved ones plus a few empty ones."""
    if data is None:
        return min(existing + BLANK_ROWS, ROWS_MAX)
    found = [int(m.group(1)) for key in data if (m := pattern.fullmatch(key))]
    return max(found, default=-1) + 1


class SettingsFieldsForm(forms.Form):
    """The settings as grouped fields. ``settings``: the full effective settings
    shown; ``tool_names``: the catalog's tool names to pick from (None when too
    many to list: typed instead); ``known_tools``: which of some names the
    catalog has, so no name that is not a tool of the catalog is ever saved."""

    reason = forms.CharField(
        label="Reason (optional)",
        required=False,
        max_length=500,
        help_text="Kept with the version in the settings history and the audit log.",
    )

    def __init__(
        self,
        data: Any = None,
        *,
        settings: Mapping[str, Any],
        tool_names: list[str] | None,
        known_tools: KnownTools,
    ) -> None:
        super().__init__(data)
        self.current = dict(settings)
        self.known_tools = known_tools
        self.full_settings: dict[str, Any] = {}
        self._defaults = EngineSettings().to_dict()
        self._add_scalars()
        self._add_weights()
        self._tool_choices = self._choices(tool_names)
        self.fields["core_tools"] = self._tools("core_tools", multiple=True)
        self.initial["core_tools"] = list(settings["core_tools"])
        self._add_anchors(data)
        self._add_transitions(data)

    # Building ------------------------------------------------------------------

    def _add_scalars(self) -> None:
        for _slug, _title, names in GROUPS:
            for name in names:
                if name in WEIGHT_KEYS or name in ROW_FIELDS:
                    continue
                self.fields[name] = scalar_field(name, self._defaults[name])
                self.initial[name] = self.current[name]

    def _add_weights(self) -> None:
        for group, keys in WEIGHT_KEYS.items():
            low, high = WEIGHT_RANGES[group]
            for key in keys:
                default = self._defaults[group].get(key, 0.0)
                field = forms.CharField(
                    label=key,
                    required=False,
                    help_text=f"Default {default:g}",
                    widget=number_input(low, high, "any"),
                )
                self.fields[weight_name(group, key)] = field
                self.initial[weight_name(group, key)] = self.current[group].get(
                    key, 0.0
                )

    def _choices(self, tool_names: list[str] | None) -> list[tuple[str, str]] | None:
        """The catalog's names, plus any the saved settings name that the
        catalog no longer has (shown as such, so they can be taken out)."""
        if tool_names is None:
            return None
        named = set(self.current["core_tools"])
        for anchor in self.current["micro_anchors"]:
            named.update(anchor["tools"])
        for src, row in self.current["transitions"].items():
            named.update([src, *row])
        gone = sorted(named - set(tool_names))
        return [(n, n) for n in tool_names] + [
            (n, f"{n} (not in this catalog)") for n in gone
        ]

    def _tools(self, label: str, *, multiple: bool) -> ToolNames:
        return ToolNames(multiple=multiple, choices=self._tool_choices, label=label)

    def _add_anchors(self, data: Any) -> None:
        anchors = self.current["micro_anchors"]
        self.anchor_count = _rows(data, ANCHOR, len(anchors))
        for i in range(min(self.anchor_count, ROWS_MAX)):
            self.fields[f"anchor_{i}_pattern"] = forms.CharField(
                label="pattern", required=False, max_length=1000, strip=False
            )
            self.fields[f"anchor_{i}_tools"] = self._tools("tools", multiple=True)
            low, high = WEIGHT_RANGES["micro_anchors.boost"]
            self.fields[f"anchor_{i}_boost"] = forms.CharField(
                label="boost", required=False, widget=number_input(low, high, "any")
            )
            if i < len(anchors):
                self.initial[f"anchor_{i}_pattern"] = anchors[i]["pattern"]
                self.initial[f"anchor_{i}_tools"] = list(anchors[i]["tools"])
                self.initial[f"anchor_{i}_boost"] = anchors[i]["boost"]

    def _add_transitions(self, data: Any) -> None:
        saved = [
            (src, dst, p)
            for src, row in self.current["transitions"].items()
            for dst, p in row.items()
        ]
        self.transition_count = _rows(data, TRANSITION, len(saved))
        low, high = WEIGHT_RANGES["transitions"]
        for i in range(min(self.transition_count, ROWS_MAX)):
            self.fields[f"transition_{i}_from"] = self._tools("after", multiple=False)
            self.fields[f"transition_{i}_to"] = self._tools("next", multiple=False)
            self.fields[f"transition_{i}_p"] = forms.CharField(
                label="probability",
                required=False,
                widget=number_input(low, high, "any"),
            )
            if i < len(saved):
                src, dst, p = saved[i]
                self.initial[f"transition_{i}_from"] = [src]
                self.initial[f"transition_{i}_to"] = [dst]
                self.initial[f"transition_{i}_p"] = p

    # Layout for the template ---------------------------------------------------

    def layout(self) -> list[dict[str, Any]]:
        """The groups in order, each with what the template shows of it."""
        out = []
        for slug, title, names in GROUPS:
            group: dict[str, Any] = {"slug": slug, "title": title, "fields": []}
            for name in names:
                if name in WEIGHT_KEYS:
                    keys = WEIGHT_KEYS[name]
                    group.setdefault("weights", []).append(
                        {
                            "name": name,
                            "help": HELP[name],
                            "range": "{:g}–{:g}".format(*WEIGHT_RANGES[name]),
                            "fields": [self[weight_name(name, k)] for k in keys],
                        }
                    )
                elif name not in ROW_FIELDS:
                    group["fields"].append(self[name])
                else:
                    group["help"] = HELP[name]
            out.append(group)
        return out

    def anchor_rows(self) -> list[tuple[forms.BoundField, ...]]:
        return [
            tuple(self[f"anchor_{i}_{part}"] for part in ("pattern", "tools", "boost"))
            for i in range(min(self.anchor_count, ROWS_MAX))
        ]

    def transition_rows(self) -> list[tuple[forms.BoundField, ...]]:
        return [
            tuple(self[f"transition_{i}_{part}"] for part in ("from", "to", "p"))
            for i in range(min(self.transition_count, ROWS_MAX))
        ]

    # Cleaning ------------------------------------------------------------------

    def clean(self) -> dict[str, Any]:
        """The full settings from the inputs, then the engine's own validation;
        every message names its setting and sits on its input."""
        data = super().clean() or {}
        for name, count in (
            ("micro_anchors", self.anchor_count),
            ("transitions", self.transition_count),
        ):
            if count > ROWS_MAX:
                self.add_error(None, f"{name}: at most {ROWS_MAX} rows")
        if self.errors:
            return data
        # Settings the form does not show (the applied learnt model) are kept.
        out: dict[str, Any] = {
            name: value
            for name, value in self.current.items()
            if name not in self.fields and name not in WEIGHT_KEYS
        }
        for name in self._defaults:
            if name in self.fields:
                out[name] = self._scalar(name, data.get(name))
        for group, keys in WEIGHT_KEYS.items():
            out[group] = {
                k: self._number(weight_name(group, k), f"{group}.{k}", data, float)
                for k in keys
            }
        out["core_tools"] = list(data.get("core_tools") or [])
        self._known_in_row("core_tools", "core_tools", out["core_tools"])
        out["micro_anchors"] = self._anchors(data)
        out["transitions"] = self._transitions(data)
        if not self.errors:
            self._engine_check(out)
        self.full_settings = out
        return data

    def _scalar(self, name: str, value: Any) -> Any:
        default = self._defaults[name]
        if not isinstance(self.fields[name], forms.CharField):
            return list(value or ()) if isinstance(default, list) else value
        if name == "category_confidence_threshold" and not str(value or "").strip():
            return None
        kind = int if is_integer(default) else float
        return self._number(name, name, {name: value}, kind)

    def _number(
        self, field: str, path: str, data: Mapping[str, Any], kind: type
    ) -> Any:
        text = str(data.get(field) or "").strip()
        if not text:
            self.add_error(field, f"{path}: is required")
            return None
        try:
            number = float(text)
        except ValueError:
            self.add_error(field, f"{path}: must be a number")
            return None
        if not math.isfinite(number):
            self.add_error(field, f"{path}: must be a finite number")
            return None
        if kind is int:
            if number != int(number):
                self.add_error(field, f"{path}: must be a whole number")
                return None
            return int(number)
        return number

    def _anchors(self, data: Mapping[str, Any]) -> list[dict[str, Any]]:
        anchors: list[dict[str, Any]] = []
        self._anchor_rows: list[int] = []
        for i in range(min(self.anchor_count, ROWS_MAX)):
            pattern = data.get(f"anchor_{i}_pattern") or ""
            tools = data.get(f"anchor_{i}_tools") or []
            if not pattern.strip() and not tools:
                continue  # an empty row: nothing, or an anchor taken out
            path = f"micro_anchors[{len(anchors)}]"
            if not pattern.strip():
                self.add_error(f"anchor_{i}_pattern", f"{path}.pattern: is required")
            boost: Any = 1.0
            if str(data.get(f"anchor_{i}_boost") or "").strip():
                boost = self._number(f"anchor_{i}_boost", f"{path}.boost", data, float)
            self._known_in_row(f"anchor_{i}_tools", f"{path}.tools", tools)
            anchors.append({"pattern": pattern, "tools": tools, "boost": boost})
            self._anchor_rows.append(i)
        return anchors

    def _known_in_row(self, field: str, path: str, names: list[str]) -> None:
        for name in sorted(set(names) - self.known_tools(names)) if names else []:
            self.add_error(field, f"{path}: {name!r} is not a tool of this catalog")

    def _transitions(self, data: Mapping[str, Any]) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        self._transition_rows: dict[tuple[str, str], int] = {}
        for i in range(min(self.transition_count, ROWS_MAX)):
            src = (data.get(f"transition_{i}_from") or [""])[0]
            dst = (data.get(f"transition_{i}_to") or [""])[0]
            p_text = str(data.get(f"transition_{i}_p") or "").strip()
            if not (src or dst or p_text):
                continue
            path = f"transitions[{i}]"
            for part, name in (("from", src), ("to", dst)):
                if not name:
                    self.add_error(
                        f"transition_{i}_{part}", f"{path}.{part}: is required"
                    )
                else:
                    self._known_in_row(
                        f"transition_{i}_{part}", f"{path}.{part}", [name]
                    )
            if (src, dst) in self._transition_rows:
                self.add_error(
                    f"transition_{i}_to", f"transitions.{src}.{dst}: is given twice"
                )
            where = f"transitions.{src}.{dst}"
            p = self._number(f"transition_{i}_p", where, data, float)
            if src and dst and p is not None:
                out.setdefault(src, {})[dst] = p
                self._transition_rows[(src, dst)] = i
        return out

    def _engine_check(self, settings: dict[str, Any]) -> None:
        try:
            problems = EngineSettings.from_dict(settings).validate()
        except SettingsError as exc:
            problems = exc.errors
        for path, message in sorted(problems.items()):
            self.add_error(self._field_for(path), f"{path}: {message}")

    def _field_for(self, path: str) -> str | None:
        """The input a problem's path names (None: the form as a whole)."""
        if path in self.fields:
            return path
        if m := WEIGHT_PATH.fullmatch(path):
            return weight_name(m.group(1), m.group(2))
        if m := ANCHOR_PATH.fullmatch(path):
            row = self._anchor_rows[int(m.group(1))]
            return f"anchor_{row}_{m.group(2)}"
        if path.startswith("no_schema_modes_allowed"):
            return "no_schema_modes_allowed"
        for (src, dst), row in self._transition_rows.items():
            if path == f"transitions.{src}.{dst}":
                return f"transition_{row}_p"
        return None

    def changed_settings(self) -> dict[str, Any]:
        """Only the keys whose value differs from the engine's defaults."""
        return only_changed(self.full_settings)

    def settings_data(self) -> dict[str, Any]:
        return dict(self.full_settings)

    def add_service_error(self, exc: ValidationError) -> None:
        self.add_error(None, exc.messages)
