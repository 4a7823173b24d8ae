"""The consent page's form: which of the person's catalogs and roles the client
may see, and whether unsafe tools may be offered. It offers only what the person
holds, so nothing more can be chosen; the service checks it again."""

from __future__ import annotations

from typing import Any

from django import forms

from identity.access import Access
from oauth.scopes import Requested
from oauth.services.connections import Policy

CATALOGS_RULE = "catalogs: choose at least one catalog, or every catalog"


class ConsentForm(forms.Form):
    all_catalogs = forms.BooleanField(
        required=False,
        label="Every catalog I can see (now and later)",
    )
    catalogs = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, label="Catalogs"
    )
    roles = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, label="Roles"
    )
    allow_unsafe = forms.BooleanField(
        required=False, label="It may be offered tools marked unsafe"
    )

    def __init__(
        self,
        *args: Any,
        access: Access,
        catalogs: list[tuple[str, str]],
        roles: tuple[str, ...],
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.access = access
        self.fields["catalogs"].choices = catalogs  # type: ignore[attr-defined]
        self.fields["roles"].choices = [(r, r) for r in roles]  # type: ignore[attr-defined]
        if not access.all_catalogs:
            del self.fields["all_catalogs"]
        if not access.allow_unsafe:
            del self.fields["allow_unsafe"]

    @classmethod
    def initial_for(
        cls, requested: Requested, access: Access, roles: tuple[str, ...]
    ) -> dict[str, Any]:
        """What the client asked for, or else everything the person holds but
        unsafe tools."""
        every = requested.catalogs is None and access.all_catalogs
        return {
            "all_catalogs": every,
            "catalogs": list(requested.catalogs or access.catalogs or ()),
            "roles": list(requested.roles or roles),
            "allow_unsafe": requested.unsafe,
        }

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if not data.get("all_catalogs") and not data.get("catalogs"):
            raise forms.ValidationError({"catalogs": CATALOGS_RULE})
        return data

    def policy(self) -> Policy:
        data = self.cleaned_data
        return Policy(
            catalogs=None if data.get("all_catalogs") else tuple(data["catalogs"]),
            roles=tuple(data["roles"]),
            allow_unsafe=bool(data.get("allow_unsafe")),
        )
