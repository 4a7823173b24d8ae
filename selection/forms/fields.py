"""The pieces of the settings form: its groups, each setting's one-line help,
its default and range as shown, and the field that picks tool names."""

from __future__ import annotations

import re
from typing import Any

from django import forms

from selection.engine.settings import NO_SCHEMA_MODES, RANGES, SCORERS

_COMMA_OR_LINE = re.compile(r"[,\n]")


# The settings as a form --------------------------------------------------------

# Catalogs with more tools than this get typed names (checked against the
# catalog) instead of a list of every name.
TOOL_CHOICES_MAX = 2000
ROWS_MAX = 500  # anchor or transition rows one form may carry
BLANK_ROWS = 2  # empty rows offered for a new anchor or transition

GROUPS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "scorer",
        "Scorer",
        (
            "default_scorer",
            "llm_shortlist",
            "llm_descriptions",
            "exploration",
            "exploration_seed",
            "exploration_depth",
        ),
    ),
    (
        "weights",
        "Weights",
        (
            "hybrid_weights",
            "auto_fusion",
            "family_pull",
            "diversity",
            "ensemble_weights",
        ),
    ),
    (
        "thresholds",
        "Thresholds",
        (
            "min_lexical_overlap",
            "min_combined_score",
            "category_confidence_threshold",
            "lexical_floor",
            "semantic_floor",
            "semantic_ceiling",
            "lexical_confidence_floor",
            "lexical_confidence_ceiling",
            "no_tool_threshold",
        ),
    ),
    (
        "pool",
        "Candidate pool",
        ("candidate_pool", "bm25_k1", "bm25_b", "no_schema_modes_allowed"),
    ),
    ("field_weights", "Field weights", ("field_weights",)),
    ("anchors", "Anchors", ("micro_anchors",)),
    ("transitions", "Transitions", ("transitions",)),
    ("core_tools", "Core tools", ("core_tools",)),
)
HELP = {
    "default_scorer": "How tools are ranked when a request names no scorer.",
    "llm_shortlist": "How many of the best tools the llm scorer shows the model.",
    "llm_descriptions": "The llm scorer sees each tool's description, not only "
    "its name.",
    "exploration": "The ensemble scorer now and then offers a lower-ranked tool, "
    "so new tools get a chance.",
    "exploration_seed": "Seed of that choice, so a run can be repeated.",
    "exploration_depth": "How far down the ranking exploration may reach.",
    "hybrid_weights": "How much each signal counts in the hybrid score.",
    "auto_fusion": "The hybrid's BM25F weight is chosen from the catalog's own "
    "texts (how far its words agree with its embeddings), not hybrid_weights.",
    "family_pull": "How far a tool is pulled towards the best match among tools "
    "sharing its name prefix (before __ . / or :).",
    "diversity": "For a request of several sentences, how far tools much like "
    "one ranked above them move down (needs the tool vectors in process).",
    "ensemble_weights": "How much each signal counts in the ensemble score.",
    "min_lexical_overlap": "Request words a tool must share to be picked "
    "(0: none needed).",
    "min_combined_score": "Lowest combined score a tool needs to be picked.",
    "category_confidence_threshold": "Confidence at which a request's category "
    "narrows the tools; empty turns the gate off.",
    "lexical_floor": "BM25F coverage under which the best match still counts as weak.",
    "no_tool_threshold": (
        "Best score under which the answer is no tool (0: off); a learn fits it."
    ),
    "semantic_floor": "Best cosine at which a request starts to look like it "
    "needs a tool.",
    "semantic_ceiling": "Best cosine at which a request surely needs a tool.",
    "lexical_confidence_floor": "Word coverage at which lexical confidence starts.",
    "lexical_confidence_ceiling": "Word coverage at which lexical confidence is full.",
    "candidate_pool": "Nearest tools by meaning that ranking considers.",
    "bm25_k1": "BM25 saturation: higher lets a repeated word count for more.",
    "bm25_b": "BM25 length normalisation: 1 fully, 0 not at all.",
    "no_schema_modes_allowed": "Tools without a parameter schema may be offered "
    "in these modes.",
    "field_weights": "How much a word found in each part of a tool counts (BM25F).",
    "micro_anchors": "A pattern over the request (RE2, case-insensitive) that "
    "boosts the chosen tools; clear a row to remove it.",
    "transitions": "After the first tool, how likely the second comes next "
    "(ensemble scorer); clear a row to remove it.",
    "core_tools": "Offered on every request that may see them, whatever it asks.",
}


def show_value(value: Any) -> str:
    if value is None:
        return "empty (off)"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value) or "none"
    return f"{value:g}" if isinstance(value, float) else str(value)


def number_input(low: float | None, high: float | None, step: str) -> forms.Widget:
    attrs = {"step": step, "inputmode": "decimal"}
    if low is not None:
        attrs["min"] = f"{low:g}"
    if high is not None:
        attrs["max"] = f"{high:g}"
    return forms.NumberInput(attrs=attrs)


def is_integer(default: Any) -> bool:
    return isinstance(default, int) and not isinstance(default, bool)


def scalar_field(name: str, default: Any) -> forms.Field:
    """One single-value setting, its range as HTML attributes (the server checks
    it again through the engine's own validation)."""
    help_text = f"{HELP[name]} Default: {show_value(default)}."
    label = name
    if name == "default_scorer":
        choices = [(s, s) for s in SCORERS]
        return forms.ChoiceField(label=label, choices=choices, help_text=help_text)
    if isinstance(default, bool):
        return forms.BooleanField(label=label, required=False, help_text=help_text)
    if name == "no_schema_modes_allowed":
        return forms.MultipleChoiceField(
            label=label,
            required=False,
            choices=[(m, m) for m in NO_SCHEMA_MODES],
            widget=forms.CheckboxSelectMultiple,
            help_text=help_text,
        )
    low, high = RANGES.get(name, (None, None))
    step = "1" if is_integer(default) else "any"
    if low is not None:
        help_text += f" Range {low:g}–{high:g}."
    return forms.CharField(
        label=label,
        required=False,
        help_text=help_text,
        widget=number_input(low, high, step),
    )


def weight_name(group: str, key: str) -> str:
    return f"{group}__{key}"


class ToolNames(forms.Field):
    """Tool names picked from the catalog: a list box, or (big catalogs) names
    typed comma-separated; either way each is checked against the catalog."""

    def __init__(
        self,
        *,
        multiple: bool,
        choices: list[tuple[str, str]] | None,
        **kwargs: Any,
    ) -> None:
        self.multiple = multiple
        widget: forms.Widget
        if choices is None:
            typed = {"placeholder": "tool names, comma-separated"}
            widget = forms.TextInput(attrs=typed)
        elif multiple:
            size = min(8, max(3, len(choices)))
            widget = forms.SelectMultiple(attrs={"size": size}, choices=choices)
        else:
            widget = forms.Select(choices=[("", "—"), *choices])
        kwargs.setdefault("required", False)
        super().__init__(widget=widget, **kwargs)

    def to_python(self, value: Any) -> list[str]:
        if isinstance(value, str):
            value = _COMMA_OR_LINE.split(value)
        return [str(v).strip() for v in value or () if str(v).strip()]

    def prepare_value(self, value: Any) -> Any:
        if isinstance(self.widget, forms.TextInput) and isinstance(value, list):
            return ", ".join(value)
        if not self.multiple and isinstance(value, list):
            return value[0] if value else ""
        return value
