"""The admin's form for Quiver's client at a source's authorization server."""

from __future__ import annotations

from django import forms


class ClientForm(forms.Form):
    client_id = forms.CharField(max_length=2000, strip=True)
    client_secret = forms.CharField(
        max_length=2000, required=False, strip=False, widget=forms.PasswordInput
    )

    def first_error(self) -> str:
        for field, errors in self.errors.items():
            return f"{field}: {errors[0]}"
        return "invalid"
