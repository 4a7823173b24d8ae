"""Console forms: they parse what a curator typed into a ToolSpec (or an import
document, or a filter) and turn service errors back into errors on the right field.

Bound forms re-render the raw text the user sent, so nothing typed is lost when a
service refuses it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.urls import reverse_lazy

from catalog.choices import (
    EmbeddingStatus,
    NoSchemaMode,
    RiskLevel,
    ToolStatus,
)
from catalog.formats import FORMATS
from catalog.models import Catalog
from catalog.naming import hidden_characters
from catalog.querysets import TOOL_ORDERINGS, ToolQuerySet
from catalog.schema_policy import SchemaProblem, check_tool_schema
from catalog.services.import_names import REFUSE, RENAME
from catalog.services.tools import (
    MAX_ORIGINAL_NAME_CHARS,
    MAX_REASON_CHARS,
    ToolConflict,
)
from catalog.spec import ToolSpec
from config import jsonparse
from config.forms import ServiceErrorsMixin

_ANY = [("", "Any")]
PAGE_SIZES = (25, 50, 100, 200)
_COMMA_OR_LINE = re.compile(r"[,\n]")


def parse_json_text(text: str, field: str) -> Any:
    """The JSON value of a textarea (None when blank), held to the API's rules
    for a body (``config.jsonparse.read_field``); errors name line and column,
    or the path of a repeated key or an unstorable text."""
    if not text.strip():
        return None
    try:
        return jsonparse.read_field(text, field)
    except jsonparse.FieldError as exc:
        raise ValidationError(str(exc)) from exc


class StringListField(forms.CharField):
    """A list of strings typed one per line (and, unless ``lines_only``, or
    separated by commas); shows a stored list back in the same form."""

    def __init__(self, *, lines_only: bool = False, **kwargs: Any) -> None:
        self.lines_only = lines_only
        kwargs.setdefault("required", False)
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": 2}))
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list):
            return "\n".join(value) if self.lines_only else ", ".join(value)
        return value

    def to_python(self, value: Any) -> list[str]:  # type: ignore[override]
        text = super().to_python(value) or ""
        parts = text.split("\n") if self.lines_only else _COMMA_OR_LINE.split(text)
        return [part.strip() for part in parts if part.strip()]


class JSONTextField(forms.CharField):
    """JSON typed in a textarea; shows a stored value pretty-printed."""

    def __init__(self, *, rows: int = 12, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault(
            "widget",
            forms.Textarea(
                attrs={"rows": rows, "spellcheck": "false", "class": "code"}
            ),
        )
        super().__init__(strip=False, **kwargs)

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, (dict, list)):
            return json.dumps(value, indent=2, ensure_ascii=False)
        return value


class OptionalBooleanSelect(forms.NullBooleanSelect):
    def __init__(self) -> None:
        super().__init__()
        self.choices = [("unknown", "Not set"), ("true", "true"), ("false", "false")]


class ToolForm(ServiceErrorsMixin, forms.Form):
    """Every ToolSpec field; ``catalog`` only when creating (tools never move)."""

    catalog = forms.ModelChoiceField(
        queryset=Catalog.objects.none(), to_field_name="slug"
    )
    name = forms.CharField(max_length=200)
    title = forms.CharField(max_length=200, required=False)
    description = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3})
    )
    parameters = JSONTextField(
        label="Parameters (JSON Schema)",
        help_text="Leave empty only with allow_no_schema and a no-schema mode.",
        widget=forms.Textarea(
            attrs={
                "rows": 16,
                "spellcheck": "false",
                "class": "code",
                # Checked against the schema policy as the curator types.
                "hx-post": reverse_lazy("console:validate-schema"),
                "hx-trigger": "keyup changed delay:400ms",
                "hx-target": "#schema-check",
                "hx-include": "closest form",
                "hx-sync": "this:replace",
            }
        ),
    )
    strict = forms.NullBooleanField(required=False, widget=OptionalBooleanSelect())
    allow_no_schema = forms.BooleanField(required=False)
    no_schema_mode = forms.ChoiceField(choices=NoSchemaMode.choices, required=False)
    safe = forms.BooleanField(required=False, initial=True)
    risk_level = forms.ChoiceField(choices=RiskLevel.choices, initial=RiskLevel.LOW)
    requires_approval = forms.BooleanField(required=False)
    status = forms.ChoiceField(choices=ToolStatus.choices, initial=ToolStatus.ACTIVE)
    category = forms.CharField(max_length=100, required=False)
    tags = StringListField(help_text="Comma-separated or one per line.")
    keywords = StringListField(help_text="Comma-separated or one per line.")
    capabilities = StringListField(help_text="Comma-separated or one per line.")
    allowed_roles = forms.MultipleChoiceField(
        label="Roles",
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="The roles this catalog knows. None ticked: every role.",
    )
    new_roles = StringListField(
        label="Add a new role",
        widget=forms.TextInput(attrs={"placeholder": "e.g. billing-ops"}),
        help_text="Only for a role nobody has yet (comma-separated): a tool open "
        "only to roles nobody has is offered to no one.",
    )
    examples = StringListField(lines_only=True, help_text="One example per line.")
    avoid_when = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2})
    )
    cost_per_call = forms.DecimalField(
        min_value=Decimal(0), max_digits=14, decimal_places=6, initial=Decimal(0)
    )
    currency = forms.CharField(min_length=3, max_length=3, initial="USD")
    annotations = JSONTextField(rows=4, help_text="A JSON object (may be empty).")
    provider_name = forms.CharField(
        max_length=64,
        required=False,
        help_text="Name providers see; derived from the name when empty.",
    )
    original_name = forms.CharField(
        max_length=MAX_ORIGINAL_NAME_CHARS,
        required=False,
        strip=False,
        help_text="The name its file or server gave it, when that name broke the "
        "name rule; searched and shown beside the name.",
    )
    reason = forms.CharField(
        label="Reason for this change",
        max_length=MAX_REASON_CHARS,
        required=False,
        help_text="Optional; kept in the tool's history and the audit log.",
    )

    def __init__(
        self,
        *args: Any,
        catalogs: QuerySet[Catalog] | None = None,
        roles: Iterable[str] = (),
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        if catalogs is None:
            del self.fields["catalog"]
        else:
            field = self.fields["catalog"]
            assert isinstance(field, forms.ModelChoiceField)
            field.queryset = catalogs
        self.known_roles = sorted({*roles, *self.initial.get("allowed_roles", [])})
        role_field = self.fields["allowed_roles"]
        assert isinstance(role_field, forms.MultipleChoiceField)
        role_field.choices = [(role, role) for role in self.known_roles]

    def clean_new_roles(self) -> list[str]:
        """New roles only: one that is a known role written differently (case,
        dashes, underscores, spaces) is refused, naming the known one."""
        known = {_role_key(role): role for role in self.known_roles}
        roles: list[str] = self.cleaned_data["new_roles"]
        for role in roles:
            if len(role) > 100 or hidden_characters(role):
                raise ValidationError(
                    f"new_roles: {role!r} must be at most 100 visible characters"
                )
            if _role_key(role) in known:
                raise ValidationError(
                    f"new_roles: {role!r} is the known role {known[_role_key(role)]!r};"
                    " tick it in the list above"
                )
        return roles

    @classmethod
    def initial_for(cls, spec: ToolSpec) -> dict[str, Any]:
        """Initial values that show a stored tool the way a curator types it."""
        return {**spec.to_dict(), "cost_per_call": spec.cost_per_call.normalize()}

    def clean_parameters(self) -> dict[str, Any] | None:
        value = parse_json_text(self.cleaned_data["parameters"], "parameters")
        if value is not None and not isinstance(value, dict):
            raise ValidationError("parameters: must be a JSON object (a JSON Schema)")
        return value

    def clean_annotations(self) -> dict[str, Any]:
        value = parse_json_text(self.cleaned_data["annotations"], "annotations")
        if value is not None and not isinstance(value, dict):
            raise ValidationError("annotations: must be a JSON object")
        return value or {}

    def to_spec(self) -> ToolSpec:
        data = self.cleaned_data
        values = {name: data[name] for name in ToolSpec.field_names()}
        chosen = [*data["allowed_roles"], *data.get("new_roles", [])]
        values["allowed_roles"] = list(dict.fromkeys(chosen))
        return ToolSpec(**values)

    def add_service_error(self, exc: ValidationError | ToolConflict) -> None:
        """Put a service's refusal on the field it names (else on the form)."""
        if isinstance(exc, ToolConflict):
            self.add_error(exc.field if exc.field in self.fields else None, str(exc))
            return
        super().add_service_error(exc)


def _role_key(role: str) -> str:
    return re.sub(r"[\s_.-]+", "", role.casefold())


def draft_schema_problems(data: Mapping[str, Any]) -> list[SchemaProblem]:
    """What the schema policy says about a half-typed tool form: the JSON of the
    schema textarea plus the opt-in fields that decide whether none is allowed."""
    try:
        schema = parse_json_text(str(data.get("parameters", "")), "parameters")
    except ValidationError as exc:
        return [SchemaProblem("/parameters", "json", exc.messages[0])]
    if schema is not None and not isinstance(schema, dict):
        return [SchemaProblem("/parameters", "type", "must be a JSON object")]
    draft = ToolSpec(
        name=str(data.get("name") or "draft"),
        parameters=schema,
        allow_no_schema=data.get("allow_no_schema") in ("on", "true"),
        no_schema_mode=str(data.get("no_schema_mode", "")),
    )
    return check_tool_schema(draft)


class ImportForm(forms.Form):
    """An import document, uploaded as a file or pasted, in a chosen or detected
    format."""

    catalog = forms.ModelChoiceField(
        queryset=Catalog.objects.none(), to_field_name="slug"
    )
    file = forms.FileField(required=False, help_text="A .json file.")
    text = forms.CharField(
        label="…or paste JSON",
        required=False,
        strip=False,
        widget=forms.Textarea(
            attrs={"rows": 10, "spellcheck": "false", "class": "code"}
        ),
    )
    format = forms.ChoiceField(
        choices=[("", "Auto-detect"), *[(fmt, fmt) for fmt in FORMATS]],
        required=False,
    )
    names = forms.ChoiceField(
        label="Names outside the tool-name rule",
        choices=[
            (REFUSE, "Refuse those tools (each listed with its reason)"),
            (RENAME, "Give them a safe name, keeping theirs as the original name"),
        ],
        initial=REFUSE,
        required=False,
    )

    def __init__(self, *args: Any, catalogs: QuerySet[Catalog], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["catalog"]
        assert isinstance(field, forms.ModelChoiceField)
        field.queryset = catalogs

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        data["names"] = data.get("names") or REFUSE
        upload, text = data.get("file"), data.get("text") or ""
        if upload is not None and text.strip():
            raise ValidationError("document: upload a file or paste JSON, not both")
        if upload is None and not text.strip():
            self.add_error("file", "file: upload a JSON file or paste JSON below")
            return data
        field = "file" if upload is not None else "text"
        try:
            raw = upload.read().decode("utf-8") if upload is not None else text
            data["document"] = parse_json_text(raw, field)
        except UnicodeDecodeError:
            self.add_error(field, f"{field}: not UTF-8 text")
        except ValidationError as exc:
            self.add_error(field, exc)
        return data

    def add_service_error(self, exc: ValidationError) -> None:
        field = "file" if self.cleaned_data.get("file") is not None else "text"
        self.add_error(field, exc.messages)


class CatalogForm(ServiceErrorsMixin, forms.Form):
    slug = forms.SlugField(max_length=64)
    name = forms.CharField(max_length=200, required=False)
    description = forms.CharField(required=False)


class ToolFilterForm(forms.Form):
    """The tool list's search box and filters; a value that is not a valid choice
    is ignored rather than refused (it came from a hand-edited URL)."""

    q = forms.CharField(required=False, label="Search")
    catalog = forms.ChoiceField(required=False)
    category = forms.ChoiceField(required=False)
    tag = forms.CharField(required=False)
    status = forms.ChoiceField(choices=_ANY + ToolStatus.choices, required=False)
    safe = forms.ChoiceField(
        choices=[*_ANY, ("true", "Safe"), ("false", "Unsafe")], required=False
    )
    embedding_status = forms.ChoiceField(
        label="Embedding", choices=_ANY + EmbeddingStatus.choices, required=False
    )
    per_page = forms.TypedChoiceField(
        label="Per page",
        choices=[(str(n), str(n)) for n in PAGE_SIZES],
        coerce=int,
        required=False,
        empty_value=None,
    )
    sort = forms.CharField(required=False, widget=forms.HiddenInput)
    FILTERS = ("q", "catalog", "category", "tag", "status", "safe", "embedding_status")

    def __init__(
        self,
        *args: Any,
        catalogs: Iterable[Catalog],
        categories: Iterable[str],
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._offer("catalog", [(c.slug, c.name) for c in catalogs])
        self._offer("category", [(c, c) for c in categories])

    def _offer(self, name: str, choices: list[tuple[str, str]]) -> None:
        field = self.fields[name]
        assert isinstance(field, forms.ChoiceField)
        field.choices = _ANY + choices

    def apply(self, tools: ToolQuerySet) -> ToolQuerySet:
        self.is_valid()
        data = {k: v for k, v in self.cleaned_data.items() if v}
        return tools.filtered(
            catalog=data.get("catalog", ""),
            category=data.get("category", ""),
            status=data.get("status", ""),
            embedding_status=data.get("embedding_status", ""),
            tag=data.get("tag", "").strip(),
            safe=data["safe"] == "true" if "safe" in data else None,
            q=data.get("q", ""),
        )

    @property
    def is_filtered(self) -> bool:
        return any(self.data.get(name) for name in self.FILTERS)

    @property
    def sort_key(self) -> str:
        """The chosen column (``-`` for descending), or "" for the default order."""
        key = str(self.data.get("sort", ""))
        return key if key.lstrip("-") in TOOL_ORDERINGS and key.count("-") < 2 else ""

    @property
    def page_size(self) -> int:
        self.is_valid()
        return int(self.cleaned_data.get("per_page") or PAGE_SIZES[0])

    def filter_query(self) -> str:
        """The filters alone, as a query string (what a bulk edit of the
        filtered set applies again)."""
        wanted = {name: self.data.get(name, "") for name in self.FILTERS}
        return urlencode({name: value for name, value in wanted.items() if value})
