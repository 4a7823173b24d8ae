"""How people are authenticated: passwords under the sign-in policy, and single
sign-on, which signs people in from its callback only."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.backends import ModelBackend
from django.http import HttpRequest

from sso.policy import password_allowed_for

SSO_BACKEND = "sso.backends.SingleSignOnBackend"


class PasswordPolicyBackend(ModelBackend):
    """Django's password check, which every path takes (the console's sign-in,
    the admin's, anything calling ``authenticate``), refused while password
    sign-in is off for anyone but the break-glass admin. The password is checked
    first either way, so a refusal takes as long as a wrong password."""

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> Any:
        user = super().authenticate(request, username, password, **kwargs)
        if user is None or password_allowed_for(user.get_username()):
            return user
        return None


class SingleSignOnBackend(ModelBackend):
    """The backend a single sign-on session names; it checks no credentials (the
    provider did), so ``authenticate`` never signs anyone in."""

    def authenticate(
        self, request: HttpRequest | None, *credentials: Any, **named: Any
    ) -> None:
        return None
