"""The "Try it" request as a form.

It keeps the raw text the user typed and does no range checks of its own: it
turns the text into the API's input shape and lets SelectInputSerializer decide,
so the page and POST /api/v1/select refuse exactly the same requests.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from catalog.forms import parse_json_text
from catalog.models import Catalog
from selection.engine.settings import SCORERS

LIST_FIELDS = ("roles", "block_tools", "allow_tools", "require_capabilities")
NUMBER_FIELDS = (
    "max_candidates",
    "min_score",
    "max_cost_per_call",
    "max_total_tokens",
    "timeout_ms",
)
# Serializer keys that have no input of their own on the page.
FIELD_FOR_KEY = {"messages": "query", "non_field_errors": None}
_COMMA_OR_LINE = re.compile(r"[,\n]")


def _number(
    label: str, *, step: str = "1", initial: Any = None, help_text: str = ""
) -> forms.CharField:
    """A number typed as text: the serializer, not the form, checks its range."""
    return forms.CharField(
        label=label,
        required=False,
        initial=initial,
        help_text=help_text,
        widget=forms.NumberInput(attrs={"step": step}),
    )


def _names(label: str, help_text: str) -> forms.CharField:
    return forms.CharField(label=label, required=False, help_text=help_text)


def flatten_errors(key: str, detail: Any) -> list[str]:
    """DRF's nested error detail as messages that each start with their field."""
    if isinstance(detail, Mapping):
        return [
            message
            for sub, value in detail.items()
            for message in flatten_errors(f"{key}[{sub}]", value)
        ]
    if isinstance(detail, list):
        return [message for item in detail for message in flatten_errors(key, item)]
    text = str(detail)
    return [text if text.startswith(f"{key}:") else f"{key}: {text}"]


class TryItForm(forms.Form):
    """One selection request as a person types it (lists comma-separated)."""

    query = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false"}),
        strip=False,
        required=False,
    )
    as_messages = forms.BooleanField(
        label="treat as chat transcript (JSON messages)", required=False
    )
    catalog = forms.ChoiceField()
    scorer = forms.ChoiceField(required=False)
    max_candidates = _number("max_candidates", initial=3)
    min_score = _number("min_score", step="any", initial=0.05)
    allow_unsafe = forms.BooleanField(label="allow_unsafe", required=False)
    roles = _names("roles", "Comma-separated; only roles you hold.")
    block_tools = _names("block_tools", "Comma-separated tool names.")
    allow_tools = _names("allow_tools", "Comma-separated tool names.")
    require_capabilities = _names("require_capabilities", "Comma-separated.")
    max_cost_per_call = _number("max_cost_per_call", step="any")
    max_total_tokens = _number("max_total_tokens")
    timeout_ms = _number("timeout_ms", help_text="Empty means no deadline.")

    def __init__(
        self,
        *args: Any,
        catalogs: Iterable[Catalog],
        default_scorer: str = "",
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._choices("catalog", [(c.slug, c.name or c.slug) for c in catalogs])
        default = f"default ({default_scorer})" if default_scorer else ""
        self._choices(
            "scorer", [("", default or "catalog default"), *[(s, s) for s in SCORERS]]
        )

    def _choices(self, name: str, choices: list[tuple[str, str]]) -> None:
        field = self.fields[name]
        assert isinstance(field, forms.ChoiceField)
        field.choices = choices

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        text = data.get("query") or ""
        if data.get("as_messages"):
            try:
                data["messages"] = parse_json_text(text, "query")
            except ValidationError as exc:
                self.add_error("query", exc)
        return data

    def payload(self) -> dict[str, Any]:
        """The input of POST /api/v1/select for what was typed (blanks left out)."""
        data = self.cleaned_data
        body: dict[str, Any] = {
            "catalog": data["catalog"],
            "allow_unsafe": bool(data.get("allow_unsafe")),
            "explain": True,
            "format": "canonical",
        }
        if data.get("as_messages"):
            if data.get("messages") is not None:
                body["messages"] = data["messages"]
        elif data.get("query"):
            body["query"] = data["query"]
        if data.get("scorer"):
            body["scorer"] = data["scorer"]
        for name in NUMBER_FIELDS:
            if str(data.get(name) or "").strip():
                body[name] = data[name].strip()
        for name in LIST_FIELDS:
            parts = _COMMA_OR_LINE.split(data.get(name) or "")
            names = [part.strip() for part in parts if part.strip()]
            if names:
                body[name] = names
        return body

    def add_input_errors(self, errors: Mapping[str, Any]) -> None:
        """Put the serializer's (or the engine's) errors on the inputs they name."""
        for key, detail in errors.items():
            field = FIELD_FOR_KEY.get(key, key)
            target = field if field in self.fields else None
            self.add_error(target, flatten_errors(key, detail))

    def field_errors(self) -> list[tuple[str, list[str]]]:
        """Every input's name and its errors (empty lists too, to clear old ones)."""
        return [(name, [str(e) for e in self[name].errors]) for name in self.fields]
