"""The sign-in forms (the console's and the admin's) under the sign-in policy, and
the sign-in settings page's forms.

While password sign-in is off, every failed password sign-in gets one answer,
whatever the name typed (the break-glass admin's with a wrong password too), so
the form never tells which name is the break-glass one; each is audited. Every
password sign-in that succeeds is audited, the break-glass admin's marked so.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError

from config.http import request_id
from config.login import ThrottledAdminAuthenticationForm, ThrottledAuthenticationForm
from sso.people import GrantForm
from sso.policy import is_break_glass, password_login_on
from sso.services.signin import record_password_sign_in, record_refusal

if TYPE_CHECKING:
    from django.contrib.auth.models import User

PASSWORD_OFF = (
    "Password sign-in is turned off: sign in with single sign-on. Only the "
    "break-glass administrator signs in with a password, and these are not "
    "their credentials."
)
PASSWORD_OFF_REASON = "password: password sign-in is off"


class PolicyMixin(forms.Form):
    """The policy's answer and the audit rows, around the throttled password check."""

    request: Any
    get_user: Callable[[], User]

    def clean(self) -> dict[str, Any]:
        try:
            cleaned = super().clean()
        except ValidationError as exc:
            if exc.code != "throttled" and not password_login_on():
                self._record_refused()
                raise ValidationError(PASSWORD_OFF, code="password_off") from exc
            raise
        user = self.get_user()
        record_password_sign_in(
            user,
            break_glass=is_break_glass(user.get_username()),
            request_id=request_id(self.request),
        )
        return cleaned or {}

    def _record_refused(self) -> None:
        """Refused while passwords are off: the account named, if it is one (the
        typed name is not kept: people type passwords into it)."""
        username = str(self.cleaned_data.get("username") or "")
        person = get_user_model().objects.filter(username=username).first()
        record_refusal(
            PASSWORD_OFF_REASON,
            method="password",
            request_id=request_id(self.request),
            person=person,
        )


class SignInForm(PolicyMixin, ThrottledAuthenticationForm):
    pass


class AdminSignInForm(PolicyMixin, ThrottledAdminAuthenticationForm):
    """The Django admin's sign-in page, under the same policy (else a way round)."""


class MappingForm(GrantForm):
    """A claim value (new mappings), the groups and the catalogs it gives."""

    named_by = "value"
    field_order = ["value", "groups", "all_catalogs", "catalogs"]
    value = forms.CharField(
        max_length=255,
        label="Claim value",
        help_text="One value of the groups claim, exactly as the provider sends it",
    )
    groups = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="admin, curator, compliance, approver; the others are roles",
    )

    def clean_value(self) -> str:
        value = str(self.cleaned_data.get("value", ""))
        if value != value.strip() or not value:
            raise ValidationError("value: no spaces at either end")
        return value
