"""Every sign-out is audited, whichever page signed the person out (the
console's, the admin's): Django's ``user_logged_out`` is the one place all pass."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import BACKEND_SESSION_KEY
from django.contrib.auth.signals import user_logged_out
from django.dispatch import receiver
from django.http import HttpRequest

from audit.actors import Actor
from config.http import request_id
from sso.backends import SSO_BACKEND
from sso.services.signin import record_sign_out


@receiver(user_logged_out, dispatch_uid="quiver_sso_sign_out")
def _signed_out(sender: Any, request: HttpRequest, user: Actor, **kwargs: Any) -> None:
    backend = request.session.get(BACKEND_SESSION_KEY, "")
    method = "sso" if backend == SSO_BACKEND else "password"
    record_sign_out(user, method=method, request_id=request_id(request))
