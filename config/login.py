"""The console's sign-in page, throttled per account and per client address.

After ACCOUNT_FAILURES wrong passwords for one account, or ADDRESS_FAILURES from one
client address (``config.http.client_address``), within a LOCK_S window, the form
refuses every attempt for that account or from that address, the right password
included, and says until when. Counts live in Redis with the API rate limits.
The rules: docs/explanation/security.md, Sign-in throttling.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.core.exceptions import ValidationError

from config import ratelimit
from config.http import client_address

ACCOUNT_FAILURES = 5
ADDRESS_FAILURES = 20
LOCK_S = 15 * 60


class LoginThrottle(AuthenticationForm):
    """Checks the locks before the password, counts failures, clears on success."""

    def clean(self) -> dict[str, Any]:
        limits = self._limits()
        window = int(ratelimit.clock() // LOCK_S)
        for key, limit, whom in limits:
            if _count(key, window, 0) >= limit:
                raise ValidationError(_wait_message(whom, window), code="throttled")
        try:
            cleaned = super().clean()
        except ValidationError:
            for key, _limit, _whom in limits:
                _count(key, window, 1)
            raise
        account_key = limits[0][0]
        _count(account_key, window, -_count(account_key, window, 0))
        return cleaned

    def _limits(self) -> list[tuple[str, int, str]]:
        username = str(self.cleaned_data.get("username") or "")
        address = client_address(self.request) if self.request else ""
        return [
            (_account_key(username), ACCOUNT_FAILURES, "for this account"),
            (f"login-address:{address}", ADDRESS_FAILURES, "from your address"),
        ]


def _account_key(username: str) -> str:
    """The account's own key (by id) when the name is one, else the typed name's."""
    users = get_user_model()._default_manager
    try:
        user = users.get_by_natural_key(username)
    except get_user_model().DoesNotExist:
        return f"login-name:{username.casefold()}"
    return f"login-account:{user.pk}"


def _count(key: str, window: int, cost: int) -> int:
    return ratelimit.COUNTER.add(key, window, cost, ttl=LOCK_S * 2)


def _wait_message(whom: str, window: int) -> str:
    end = (window + 1) * LOCK_S
    minutes = max(1, math.ceil((end - ratelimit.clock()) / 60))
    until = dt.datetime.fromtimestamp(end, tz=dt.UTC).strftime("%H:%M UTC")
    return (
        f"Too many failed sign-ins {whom}. Wait {minutes} min (until {until}) "
        "and try again."
    )


class ThrottledAuthenticationForm(LoginThrottle):
    pass


class ThrottledAdminAuthenticationForm(LoginThrottle, AdminAuthenticationForm):
    """The admin's own sign-in page gets the same locks (else it is a way round)."""


class ThrottledLoginView(LoginView):
    authentication_form = ThrottledAuthenticationForm
