"""API keys in the console (admins): list with last use, create, rotate, revoke.

The key is shown once, on the page that made it; only its hash is stored. A person
sees and manages only the keys within their own access (``keys_within``): any
other key is a 404; a key bigger than them is refused naming the field."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.utils import timezone
from django.views.decorators.http import require_POST

from catalog.access import access_for, keys_within
from catalog.forms import ApiClientForm
from catalog.models import ApiClient
from catalog.services.clients import (
    create_api_client,
    revoke_api_client,
    rotate_api_client,
)
from config.http import request_id
from config.pages import acting_user, paginate, render_page
from config.ratelimit import rate_limited

TEMPLATE = "catalog/client_list.html"


def _require_admin(request: HttpRequest) -> None:
    if not access_for(request.user).is_admin:
        raise PermissionDenied("managing API keys needs the admin scope")


def _keys(request: HttpRequest) -> QuerySet[ApiClient]:
    """The keys this person may see and manage."""
    keys = ApiClient.objects.select_related("owner").order_by("revoked", "name")
    return keys_within(access_for(request.user), keys)


@login_required
@rate_limited
def client_list(request: HttpRequest) -> HttpResponse:
    """Every key with its scope, limits and last use; the form makes a new one."""
    _require_admin(request)
    form = ApiClientForm(request.POST or None)
    new_key, status = "", 200
    if request.method == "POST" and form.is_valid():
        try:
            new_key = _create(request, form)
        except ValidationError as exc:
            form.add_service_error(exc)
        except PermissionDenied as exc:
            form.add_service_error(ValidationError({_field(exc): [str(exc)]}))
            status = 403
        else:
            form = ApiClientForm()
    return _page(request, form, new_key=new_key, status=status)


def _field(exc: PermissionDenied) -> str:
    """The field a refusal names ("catalogs: ..." -> "catalogs")."""
    return str(exc).split(":", 1)[0]


def _create(request: HttpRequest, form: ApiClientForm) -> str:
    data = form.cleaned_data
    days = data.get("expires_days")
    _client, key = create_api_client(
        data["name"],
        data["scope"],
        data["roles"],
        data["catalogs"],
        allow_unsafe=data["allow_unsafe"],
        expires=timezone.now() + timedelta(days=days) if days else None,
        rate_limit_per_minute=data.get("rate_limit_per_minute"),
        actor=acting_user(request),
        request_id=request_id(request),
    )
    return key


@require_POST
@login_required
@rate_limited
def client_rotate(request: HttpRequest, client_id: int) -> HttpResponse:
    _require_admin(request)
    client = get_object_or_404(_keys(request), pk=client_id)
    try:
        client, key = rotate_api_client(
            client, actor=acting_user(request), request_id=request_id(request)
        )
    except ValidationError as exc:
        return _page(request, ApiClientForm(), error=exc.messages[0], status=400)
    return _page(request, ApiClientForm(), new_key=key, rotated=client.name)


@require_POST
@login_required
@rate_limited
def client_revoke(request: HttpRequest, client_id: int) -> HttpResponse:
    _require_admin(request)
    client = get_object_or_404(_keys(request), pk=client_id)
    revoke_api_client(
        client, actor=acting_user(request), request_id=request_id(request)
    )
    return _page(request, ApiClientForm(), revoked=client.name)


def _page(
    request: HttpRequest,
    form: ApiClientForm,
    *,
    new_key: str = "",
    status: int = 200,
    **notes: str,
) -> HttpResponse:
    context = {
        "page": paginate(request, _keys(request)),
        "form": form,
        "new_key": new_key,
        "now": timezone.now(),
        **notes,
    }
    return render_page(request, TEMPLATE, context, status=status)
