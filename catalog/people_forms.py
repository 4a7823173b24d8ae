"""The People page's form: a person's username (new people), groups and catalogs.

Kept beside ``catalog.forms`` rather than in it so the people and API-key pages
change apart; the rules themselves are the service's (catalog.services.people)."""

from __future__ import annotations

from typing import Any

from django import forms

from catalog.services.people import group_choices
from config.forms import ServiceErrorsMixin


class PersonForm(ServiceErrorsMixin, forms.Form):
    """Groups and catalogs; ``username`` only when making a person."""

    username = forms.RegexField(
        regex=r"^[\w.@+-]{1,150}$",
        max_length=150,
        error_messages={"invalid": "Letters, digits and @ . + - _ only."},
    )
    groups = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="admin, curator, compliance; the others are roles",
    )
    all_catalogs = forms.BooleanField(
        required=False, label="All catalogs (every catalog, now and later)"
    )
    catalogs = forms.CharField(
        required=False,
        max_length=2000,
        help_text="Comma-separated slugs, when not all catalogs",
    )

    def __init__(self, *args: Any, new: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        groups = self.fields["groups"]
        assert isinstance(groups, forms.MultipleChoiceField)
        groups.choices = [(name, name) for name in group_choices()]
        if not new:
            del self.fields["username"]

    def clean_catalogs(self) -> list[str]:
        value = self.cleaned_data.get("catalogs", "")
        return [item.strip() for item in value.split(",") if item.strip()]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("all_catalogs") and data.get("catalogs"):
            self.add_error(
                "catalogs", "catalogs: leave empty when all catalogs is chosen"
            )
        return data

    def chosen_catalogs(self) -> list[str] | None:
        """None: all catalogs (the explicit box); else the slugs given."""
        data = self.cleaned_data
        return None if data["all_catalogs"] else list(data["catalogs"])
