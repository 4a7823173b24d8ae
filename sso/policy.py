"""Whether a password may sign someone in: while password sign-in is on, anyone's;
while it is off (``QUIVER_PASSWORD_LOGIN=false`` or the console's switch), only
the break-glass admin's (``QUIVER_BREAK_GLASS_ADMIN``, a username)."""

from __future__ import annotations

from django.conf import settings

from sso.models import SignInPolicy

POLICY_PK = 1


def sso_on() -> bool:
    return settings.QUIVER_OIDC is not None


def console_switch() -> bool:
    """The console's switch (on until an admin turns it off)."""
    row = SignInPolicy.objects.filter(pk=POLICY_PK).only("password_login").first()
    return True if row is None else row.password_login


def password_login_on() -> bool:
    return bool(settings.QUIVER_PASSWORD_LOGIN) and console_switch()


def break_glass_name() -> str:
    return str(settings.QUIVER_BREAK_GLASS_ADMIN or "")


def is_break_glass(username: str) -> bool:
    name = break_glass_name()
    return bool(name) and username == name


def password_allowed_for(username: str) -> bool:
    return is_break_glass(username) or password_login_on()
