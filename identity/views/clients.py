"""API keys in the console (admins): list (searched, paged) with last use, create,
edit, rotate, revoke.

The key is shown once, on the page that made it; only its hash is stored. A person
sees and manages only the keys within their own access (``keys_within``): any
other key is a 404; a key bigger than them is refused naming the field."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from config.forms import ServiceErrorsMixin
from config.http import request_id
from config.pages import acting_user, paginate, render_page
from config.ratelimit import rate_limited
from identity.access import access_for, keys_within
from identity.forms import ApiClientEditForm, ApiClientForm
from identity.models import ApiClient
from identity.services.clients import (
    change_api_client,
    create_api_client,
    person_named,
    revoke_api_client,
    rotate_api_client,
)

TEMPLATE = "identity/client_list.html"


def _require_admin(request: HttpRequest) -> None:
    if not access_for(request.user).is_admin:
        raise PermissionDenied("managing API keys needs the admin scope")


def _keys(request: HttpRequest) -> QuerySet[ApiClient]:
    """The keys this person may see and manage."""
    keys = ApiClient.objects.select_related("owner").order_by("revoked", "name")
    return keys_within(access_for(request.user), keys)


def _searched(request: HttpRequest) -> QuerySet[ApiClient]:
    """``?q=``: a part of the key's name or prefix, or its scope or a role."""
    keys, q = _keys(request), request.GET.get("q", "").strip()[:100]
    if q:
        keys = keys.filter(
            Q(name__icontains=q)
            | Q(key_prefix__istartswith=q.removeprefix("qv_"))
            | Q(scope=q.lower())
            | Q(roles__contains=[q])
        )
    return keys


@require_http_methods(["GET", "HEAD", "POST"])
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
        except (ValidationError, PermissionDenied) as exc:
            status = _add_refusal(form, exc, status)
        else:
            form = ApiClientForm()
    return _page(request, form, new_key=new_key, status=status)


def _add_refusal(
    form: ServiceErrorsMixin, exc: ValidationError | PermissionDenied, status: int
) -> int:
    """A service's refusal on ``form``, on the field it names, and the status to
    answer with: 403 past the caller's own access, else ``status``."""
    if isinstance(exc, PermissionDenied):
        field = str(exc).split(":", 1)[0]
        form.add_service_error(ValidationError({field: [str(exc)]}))
        return 403
    form.add_service_error(exc)
    return status


def _create(request: HttpRequest, form: ApiClientForm) -> str:
    data = form.cleaned_data
    days = data.get("expires_days")
    person = person_named(data["person"]) if data.get("person") else None
    _client, key = create_api_client(
        data["name"],
        data["scope"],
        data["roles"],
        data["catalogs"],
        allow_unsafe=data["allow_unsafe"],
        expires=timezone.now() + timedelta(days=days) if days else None,
        rate_limit_per_minute=data.get("rate_limit_per_minute"),
        person=person,
        actor=acting_user(request),
        request_id=request_id(request),
    )
    return key


@require_http_methods(["GET", "HEAD", "POST"])
@login_required
@rate_limited
def client_edit(request: HttpRequest, client_id: int) -> HttpResponse:
    """Change a key's roles, catalogs, unsafe permission or rate limit
    (``change_api_client``: never bigger than the editor, audited as a change)."""
    _require_admin(request)
    client = get_object_or_404(_keys(request).filter(revoked=False), pk=client_id)
    if request.method != "POST":
        return _page(request, ApiClientForm(), editing=client)
    form = ApiClientEditForm(request.POST)
    status = 400
    if form.is_valid():
        try:
            _change(request, client, form)
        except (ValidationError, PermissionDenied) as exc:
            status = _add_refusal(form, exc, status)
        else:
            messages.success(request, f"Saved the changes to {client.name}.")
            return _back_to_list(request)
    return _page(
        request, ApiClientForm(), editing=client, edit_form=form, status=status
    )


def _back_to_list(request: HttpRequest) -> HttpResponse:
    """The list as it was searched when Edit was pressed."""
    q = request.GET.get("q", "")
    url = reverse("identity:client-list")
    return redirect(f"{url}?{urlencode({'q': q})}" if q else url)


def _change(request: HttpRequest, client: ApiClient, form: ApiClientEditForm) -> None:
    data = form.cleaned_data
    change_api_client(
        client,
        actor=acting_user(request),
        request_id=request_id(request),
        roles=data["roles"],
        catalogs=data["catalogs"],
        allow_unsafe=data["allow_unsafe"],
        rate_limit_per_minute=data.get("rate_limit_per_minute"),
    )


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
    editing: ApiClient | None = None,
    edit_form: ApiClientEditForm | None = None,
    **notes: str,
) -> HttpResponse:
    if editing is not None and edit_form is None:
        edit_form = ApiClientEditForm.of(editing)
    context = {
        "page": paginate(request, _searched(request)),
        "q": request.GET.get("q", ""),
        "form": form,
        "editing": editing,
        "edit_form": edit_form,
        "new_key": new_key,
        "now": timezone.now(),
        **notes,
    }
    return render_page(request, TEMPLATE, context, status=status)
