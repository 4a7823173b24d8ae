"""The identity console's forms: a person's username (new people), groups and
catalogs; a key's grant. The rules themselves are the services'
(identity.services.people, identity.services.clients)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from config.forms import ServiceErrorsMixin
from identity.access_people import Refused
from identity.choices import ApiScope
from identity.services.people import group_choices


class GrantForm(ServiceErrorsMixin, forms.Form):
    """Groups and catalogs to give, as a person's page and a sign-in claim
    mapping take them; ``named_by`` (the field naming what is granted) only
    when making one."""

    named_by = ""
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
            del self.fields[self.named_by]

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

    def granted(self) -> dict[str, Any]:
        """The services' ``groups`` and ``catalogs`` (None: all) from the form."""
        return {
            "groups": self.cleaned_data["groups"],
            "catalogs": self.chosen_catalogs(),
        }

    def add_refusal(self, exc: ValidationError | Refused) -> int:
        """A service's refusal on the form, and the status to answer with: 403
        naming the field past the caller's own access, 400 for a bad value."""
        if isinstance(exc, Refused):
            self.add_error(exc.field if exc.field in self.fields else None, str(exc))
            return 403
        self.add_service_error(exc)
        return 400

    @staticmethod
    def initial_of(groups: Iterable[str], catalogs: list[str] | None) -> dict[str, Any]:
        """The form's values for what is given now (``catalogs`` None: all)."""
        return {
            "groups": list(groups),
            "all_catalogs": catalogs is None,
            "catalogs": ", ".join(catalogs or []),
        }


class PersonForm(GrantForm):
    """Groups and catalogs; ``username`` only when making a person."""

    named_by = "username"
    field_order = ["username", "groups", "all_catalogs", "catalogs"]
    username = forms.RegexField(
        regex=r"^[\w.@+-]{1,150}$",
        max_length=150,
        error_messages={"invalid": "Letters, digits and @ . + - _ only."},
    )


class ApiClientGrantForm(ServiceErrorsMixin, forms.Form):
    """What a key may see and do; every catalog is an explicit box, never the
    meaning of an empty list."""

    roles = forms.CharField(
        required=False, help_text="Comma-separated, e.g. support, finance"
    )
    catalogs = forms.CharField(
        required=False, help_text="Comma-separated slugs, or tick every catalog"
    )
    all_catalogs = forms.BooleanField(required=False, label="Every catalog")
    allow_unsafe = forms.BooleanField(
        required=False, label="May be offered tools marked unsafe"
    )
    rate_limit_per_minute = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=1_000_000,
        label="Selections per minute",
        help_text="Blank: the site's default",
    )

    def clean_roles(self) -> list[str]:
        return _comma_list(self.cleaned_data.get("roles", ""))

    def clean_catalogs(self) -> list[str]:
        return _comma_list(self.cleaned_data.get("catalogs", ""))

    def clean(self) -> dict[str, Any]:
        """Every catalog is a ticked box, never an empty list: one of the two."""
        data = super().clean() or {}
        listed, every = data.get("catalogs"), data.get("all_catalogs")
        if listed and every:
            self.add_error(
                "catalogs", "catalogs: list catalogs or tick every catalog, not both"
            )
        elif not listed and not every and "catalogs" not in self.errors:
            self.add_error(
                "catalogs",
                "catalogs: name the catalogs the key may see, or tick every catalog",
            )
        else:
            data["catalogs"] = "*" if every else listed
        return data


class ApiClientForm(ApiClientGrantForm):
    """A new API key: who it is for, what it may see, when it stops."""

    name = forms.RegexField(
        regex=r"^[A-Za-z0-9_.-]{1,100}$",
        max_length=100,
        error_messages={"invalid": "Letters, digits, dots, dashes and underscores."},
    )
    scope = forms.ChoiceField(choices=ApiScope.choices, initial=ApiScope.AGENT)
    expires_days = forms.IntegerField(
        required=False, min_value=1, max_value=3650, label="Expires after (days)"
    )
    person = forms.CharField(
        required=False,
        max_length=150,
        label="Acts for (username)",
        help_text="Optional: the person this key acts for; it never holds more "
        "than they do, and the audit names them.",
    )


class ApiClientEditForm(ApiClientGrantForm):
    """A key's roles, catalogs, unsafe permission and rate limit, as they are now."""

    @classmethod
    def of(cls, client: Any) -> ApiClientEditForm:
        return cls(
            initial={
                "roles": ", ".join(client.roles),
                "catalogs": "" if client.all_catalogs else ", ".join(client.catalogs),
                "all_catalogs": client.all_catalogs,
                "allow_unsafe": client.allow_unsafe,
                "rate_limit_per_minute": client.rate_limit_per_minute,
            }
        )


def _comma_list(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]
