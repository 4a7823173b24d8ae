"""Signing in: the console's sign-in page, single sign-on's start and callback.

The start keeps the sign-in's state (and where to go after, one of Quiver's own
paths) in the session; the callback spends it, lets ``sso.oidc`` check the
provider's answer and ``sso.services.signin`` decide. A callback this browser did
not start is refused without an audit row (nothing was decided); one it started
that fails a check, or a person whose claim maps to nothing, is refused and
audited. Codes and tokens never reach a log, a page or the audit.
"""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.contrib.auth import login
from django.contrib.auth.views import LoginView
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.crypto import constant_time_compare
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from rest_framework.exceptions import Throttled

from config.env import OidcProvider
from config.http import client_address, request_id
from config.ratelimit import charge
from sso import oidc
from sso.backends import SSO_BACKEND
from sso.forms import SignInForm
from sso.policy import break_glass_name, password_login_on
from sso.services.signin import SHOWN_VALUES, record_refusal, sign_in_verified

PENDING = "quiver_sso_pending"
# Sign-in starts and callbacks a minute from one address.
ATTEMPTS_PER_MINUTE = 30


class SignInView(LoginView):
    """The console's sign-in page: "Sign in with <provider>" when single sign-on
    is on, the password form under the sign-in policy."""

    authentication_form = SignInForm

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        provider = settings.QUIVER_OIDC
        context["sso_name"] = provider.name if provider else ""
        context["password_on"] = password_login_on()
        context["break_glass"] = bool(break_glass_name())
        return context


def safe_next(value: str | None) -> str:
    """``value`` when it is one of Quiver's own paths, else ''."""
    if not value or not value.startswith("/") or value.startswith(("//", "/\\")):
        return ""
    if any(ord(ch) < 32 or ch == "\x7f" for ch in value):
        return ""
    return value if url_has_allowed_host_and_scheme(value, allowed_hosts=None) else ""


def callback_uri(request: HttpRequest) -> str:
    """The redirect URI registered at the provider (the public URL's when set)."""
    path = reverse("sso:callback")
    public = str(settings.QUIVER_PUBLIC_URL or "").rstrip("/")
    return public + path if public else request.build_absolute_uri(path)


def _provider() -> OidcProvider:
    provider = settings.QUIVER_OIDC
    if provider is None:
        raise Http404("single sign-on is off")
    return provider


def _throttled(request: HttpRequest) -> HttpResponse | None:
    try:
        charge(
            f"sso:{client_address(request)}",
            ATTEMPTS_PER_MINUTE,
            1,
            what="single sign-on attempts a minute from one address",
        )
    except Throttled as exc:
        response = render(request, "429.html", {"detail": exc.detail}, status=429)
        response["Retry-After"] = str(int(getattr(exc, "wait", None) or 60))
        return response
    return None


def _provider_down(request: HttpRequest, provider: OidcProvider) -> HttpResponse:
    detail = f"identity provider: {provider.name} did not answer"
    return render(request, "503.html", {"detail": detail}, status=503)


@never_cache
@require_GET
def sso_start(request: HttpRequest) -> HttpResponse:
    """Send the browser to the provider, with a fresh state, nonce and PKCE."""
    provider = _provider()
    refused = _throttled(request)
    if refused is not None:
        return refused
    try:
        url, state = oidc.start(request, provider, callback_uri(request))
    except oidc.ProviderDown:
        return _provider_down(request, provider)
    except oidc.SignInFailed as exc:
        return _refused_page(request, provider, exc.reason, status=503)
    request.session[PENDING] = {
        "state": state,
        "next": safe_next(request.GET.get("next")),
        "started": time.time(),
    }
    return redirect(url)


@never_cache
@require_GET
def sso_callback(request: HttpRequest) -> HttpResponse:
    """The provider's answer: check it, sign the person in, go where they were."""
    provider = _provider()
    refused = _throttled(request)
    if refused is not None:
        return refused
    pending = request.session.pop(PENDING, None)
    if not isinstance(pending, dict):
        return _refused_page(request, provider, "state: no sign-in was started here")
    problem = _pending_problem(request, pending)
    if not problem:
        try:
            verified = oidc.finish(request, provider)
        except oidc.ProviderDown:
            return _provider_down(request, provider)
        except oidc.SignInFailed as exc:
            problem = exc.reason
    if problem:
        record_refusal(problem, method="sso", request_id=request_id(request))
        return _refused_page(request, provider, problem)
    outcome = sign_in_verified(
        verified,
        groups_claim=provider.groups_claim,
        request_id=request_id(request),
        then=lambda person: _login(request, person, provider),
    )
    if outcome.refusal:
        return _no_access_page(request, provider, outcome.refusal, outcome.claim_values)
    return redirect(pending.get("next") or settings.LOGIN_REDIRECT_URL)


def _pending_problem(request: HttpRequest, pending: dict[str, Any]) -> str:
    if time.time() - float(pending.get("started", 0)) > oidc.PENDING_S:
        return "state: the sign-in took too long; start again"
    if not constant_time_compare(
        str(pending.get("state", "")), request.GET.get("state", "")
    ):
        return "state: not the sign-in this browser started"
    return ""


def _login(request: HttpRequest, person: Any, provider: OidcProvider) -> None:
    login(request, person, backend=SSO_BACKEND)
    request.session.set_expiry(provider.session_s)


def _refused_page(
    request: HttpRequest, provider: OidcProvider, reason: str, *, status: int = 400
) -> HttpResponse:
    context = {"sso_name": provider.name, "reason": reason}
    return render(request, "sso/refused.html", context, status=status)


def _no_access_page(
    request: HttpRequest, provider: OidcProvider, reason: str, values: list[str]
) -> HttpResponse:
    context = {
        "sso_name": provider.name,
        "reason": reason,
        "claim": provider.groups_claim,
        "values": values[:SHOWN_VALUES],
        "more": max(0, len(values) - SHOWN_VALUES),
    }
    return render(request, "sso/no_access.html", context, status=403)
