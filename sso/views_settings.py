"""The console's sign-in settings page (admins): the provider as configured, the
claim mapping (add, change, remove) and the password switch. Every change is a
service of ``sso.services.mappings`` (audited there)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods, require_POST

from config.http import request_id
from config.pages import acting_user, paginate, render_page
from config.ratelimit import rate_limited
from sso.forms import MappingForm
from sso.models import ClaimMapping
from sso.people import Refused, access_of
from sso.policy import break_glass_name, console_switch
from sso.services.mappings import (
    create_mapping,
    delete_mapping,
    get_mapping_for_user,
    mappings_visible_to,
    set_password_login,
    update_mapping,
)
from sso.views import callback_uri


def _require_admin(request: HttpRequest) -> None:
    if not access_of(request.user).is_admin:
        raise PermissionDenied("managing sign-in needs the admin scope")


@require_http_methods(["GET", "POST"])
@login_required
@rate_limited
def sign_in_settings(request: HttpRequest) -> HttpResponse:
    """The provider, every mapping the admin may change, a form for a new one."""
    _require_admin(request)
    form = MappingForm(request.POST or None)
    if request.method != "POST":
        return _page(request, form)
    if not form.is_valid():
        return _page(request, form, status=400)
    try:
        create_mapping(
            form.cleaned_data["value"],
            **form.granted(),
            actor=acting_user(request),
            request_id=request_id(request),
        )
    except (ValidationError, Refused) as exc:
        return _page(request, form, status=form.add_refusal(exc))
    messages.success(request, f"Mapped {form.cleaned_data['value']!r}.")
    return redirect("sso:settings")


@require_http_methods(["GET", "POST"])
@login_required
@rate_limited
def mapping_edit(request: HttpRequest, mapping_id: int) -> HttpResponse:
    """One mapping's groups and catalogs."""
    _require_admin(request)
    mapping = get_mapping_for_user(request.user, mapping_id)
    initial = MappingForm.initial_of(
        mapping.groups.values_list("name", flat=True), mapping.catalogs
    )
    form = MappingForm(request.POST or None, initial=initial, new=False)
    page = _edit_page(mapping)
    if request.method != "POST":
        return page(request, form)
    if not form.is_valid():
        return page(request, form, status=400)
    try:
        update_mapping(
            mapping,
            **form.granted(),
            actor=acting_user(request),
            request_id=request_id(request),
        )
    except (ValidationError, Refused) as exc:
        return page(request, form, status=form.add_refusal(exc))
    messages.success(request, f"Saved the mapping of {mapping.value!r}.")
    return redirect("sso:settings")


@require_POST
@login_required
@rate_limited
def mapping_delete(request: HttpRequest, mapping_id: int) -> HttpResponse:
    _require_admin(request)
    mapping = get_mapping_for_user(request.user, mapping_id)
    value = mapping.value
    delete_mapping(mapping, actor=acting_user(request), request_id=request_id(request))
    messages.success(request, f"Removed the mapping of {value!r}.")
    return redirect("sso:settings")


@require_POST
@login_required
@rate_limited
def password_switch(request: HttpRequest) -> HttpResponse:
    """Turn password sign-in on (``on=1``) or off (``on=0``)."""
    _require_admin(request)
    on = request.POST.get("on") == "1"
    try:
        set_password_login(
            on, actor=acting_user(request), request_id=request_id(request)
        )
    except Refused as exc:
        return _page(request, MappingForm(), error=str(exc), status=403)
    except ValidationError as exc:
        return _page(request, MappingForm(), error="; ".join(exc.messages), status=400)
    messages.success(request, f"Password sign-in turned {'on' if on else 'off'}.")
    return redirect("sso:settings")


def _page(
    request: HttpRequest, form: MappingForm, *, status: int = 200, **notes: Any
) -> HttpResponse:
    provider = settings.QUIVER_OIDC
    context = {
        "page": paginate(request, mappings_visible_to(request.user)),
        "form": form,
        "provider": provider,
        "redirect_uri": callback_uri(request),
        "env_password_login": bool(settings.QUIVER_PASSWORD_LOGIN),
        "console_password_login": console_switch(),
        "break_glass": break_glass_name(),
        "may_switch": access_of(request.user).catalogs is None,
        **notes,
    }
    return render_page(request, "sso/settings.html", context, status=status)


def _edit_page(mapping: ClaimMapping) -> Any:
    def render(
        request: HttpRequest, form: MappingForm, *, status: int = 200
    ) -> HttpResponse:
        context = {"mapping": mapping, "form": form}
        return render_page(request, "sso/mapping_edit.html", context, status=status)

    return render
