"""Console forms of sources: headers are typed one per line, "Name: value"; the
masked value shown back keeps the stored one."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError

from config.forms import ServiceErrorsMixin
from sources.secrets import MASK

HEADERS_HELP = (
    "One per line, Name: value (e.g. Authorization: Bearer …). Values are stored "
    f"encrypted and shown back as {MASK}; leave {MASK} to keep a value."
)


def parse_header_lines(text: str) -> dict[str, str]:
    headers: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        name, colon, value = line.partition(":")
        if not colon or not name.strip() or not value.strip():
            raise ValidationError(f"headers: line {number}: expected Name: value")
        headers[name.strip()] = value.strip()
    return headers


def header_lines(masked: dict[str, str]) -> str:
    return "\n".join(f"{name}: {value}" for name, value in masked.items())


class SourceForm(ServiceErrorsMixin, forms.Form):
    name = forms.CharField(
        max_length=64,
        help_text="Lower-case letters, digits, hyphens; prefixes its tools",
    )
    url = forms.CharField(
        max_length=2000, label="URL", help_text="The server's streamable HTTP endpoint"
    )
    headers = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
        help_text=HEADERS_HELP,
    )
    # The upper bound is the service's (sources.services.timeout_problem).
    timeout_seconds = forms.FloatField(initial=30, min_value=1, label="Timeout (s)")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        most = settings.QUIVER_CALL_TIMEOUT_MAX_SECONDS
        self.fields["timeout_seconds"].widget.attrs["max"] = most

    def clean_headers(self) -> dict[str, str]:
        return parse_header_lines(self.cleaned_data.get("headers", ""))


class SourceEditForm(SourceForm):
    """The same fields; the name is shown but fixed (its tools' namespace)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["name"].disabled = True
        if self.initial.get("kind") == "stdio":
            # Its command is the settings file's: no url or headers to edit here.
            for field in ("url", "headers"):
                self.fields[field].disabled = True
                self.fields[field].required = False
            self.fields[
                "url"
            ].help_text = "A stdio source: its command is in the server's settings file"
