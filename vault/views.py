"""Console pages of people's connections: "My connections" (the sources that ask
each person for OAuth, which ones the person connected, connect and disconnect),
the authorization server's answer (the callback), the client ID metadata
document an authorization server reads, and an admin's client id for a source
whose server registers nobody by itself.

A connection starts only from a POST of the person's own page (a link an agent
hands out opens the page; it never starts a flow by itself). Codes, states and
tokens never reach a page, a log or the audit."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST
from rest_framework.exceptions import Throttled

from config.csp import allow_form_redirects
from config.http import client_address, request_id
from config.pages import acting_user, render_page
from config.params import MAX_ID, whole_number
from config.ratelimit import charge, rate_limited
from sources.querysets import get_source_for_user
from vault import registration
from vault.forms import ClientForm
from vault.models import SourceAuthorization
from vault.querysets import connectable_source, connections_page, own_connection
from vault.services import authorizations
from vault.services.connections import (
    ConnectRefused,
    disconnect,
    finish_connection,
    start_connection,
)

# Connection starts and callbacks a minute from one address.
ATTEMPTS_PER_MINUTE = 30


def public_base(request: HttpRequest) -> str:
    """Quiver's address as people's browsers reach it (the public URL's when set)."""
    public = str(settings.QUIVER_PUBLIC_URL or "").rstrip("/")
    return public or request.build_absolute_uri("/").rstrip("/")


@require_GET
@login_required
@rate_limited
def connection_list(request: HttpRequest) -> HttpResponse:
    """The person's connections, and the sources they could connect (whose
    authorization servers its Connect buttons may redirect the browser to)."""
    rows = connections_page(request.user)
    wanted = whole_number(request.GET.get("source", ""), MAX_ID)
    context = {"rows": rows, "wanted": wanted}
    response = render_page(request, "vault/connection_list.html", context)
    allow_form_redirects(response, (_origin(row.authorization) for row in rows))
    return response


def _origin(auth: SourceAuthorization) -> str:
    """The origin of the source's authorization endpoint (checked at discovery)."""
    parts = urlsplit(str(auth.metadata.get("authorization_endpoint") or ""))
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else ""


@never_cache
@require_POST
@login_required
def connect(request: HttpRequest, source_id: int) -> HttpResponse:
    """Send the person's browser to the source's authorization server."""
    source = connectable_source(request.user, source_id)
    refused = _throttled(request)
    if refused is not None:
        return refused
    try:
        url = start_connection(
            request.session, acting_user(request), source, base=public_base(request)
        )
    except ConnectRefused as exc:
        messages.error(request, exc.reason)
        return redirect("vault:connection-list")
    return redirect(url)


@never_cache
@require_GET
@login_required
def callback(request: HttpRequest, source_id: int) -> HttpResponse:
    """The authorization server's answer: checked, then the person's tokens in
    the vault."""
    source = connectable_source(request.user, source_id)
    refused = _throttled(request)
    if refused is not None:
        return refused
    keys = ("code", "state", "iss", "error")
    answer = {key: request.GET[key] for key in keys if key in request.GET}
    try:
        finish_connection(
            request.session,
            acting_user(request),
            source,
            answer,
            request_id=request_id(request),
        )
    except ConnectRefused as exc:
        context = {"source": source, "reason": exc.reason}
        return render(request, "vault/refused.html", context, status=400)
    messages.success(request, f"Connected your account at {source.name}.")
    return redirect("vault:connection-list")


@require_POST
@login_required
@rate_limited
def disconnect_view(request: HttpRequest, connection_id: str) -> HttpResponse:
    """Disconnect one of the person's own connections (revoked where it can be)."""
    connection = own_connection(request.user, connection_id)
    name = connection.source.name
    disconnect(connection, actor=acting_user(request), request_id=request_id(request))
    messages.success(request, f"Disconnected your account at {name}.")
    return redirect("vault:connection-list")


@require_GET
def client_document(request: HttpRequest, source_id: int) -> JsonResponse:
    """The client ID metadata document of a source's client (read by its
    authorization server, without a session): public facts only."""
    auth = SourceAuthorization.objects.filter(source_id=source_id).first()
    if auth is None:
        raise Http404("source: no such client")
    base = public_base(request)
    found = registration.document(
        authorizations.document_url(base, auth.source),
        authorizations.callback_url(base, auth.source),
        auth.scope,
    )
    response = JsonResponse(found)
    response["Cache-Control"] = "public, max-age=300"
    return response


@require_POST
@login_required
@rate_limited
def source_client(request: HttpRequest, source_id: int) -> HttpResponse:
    """An admin gives Quiver's client id (and secret) at the source's server."""
    source = get_source_for_user(request.user, source_id)
    auth = SourceAuthorization.objects.filter(source=source).first()
    if auth is None:
        raise Http404("source: does not ask each person for authorization")
    form = ClientForm(request.POST)
    if not form.is_valid():
        messages.error(request, form.first_error())
        return redirect("sources:source-detail", source_id=source.pk)
    try:
        authorizations.set_client(
            auth,
            **form.cleaned_data,
            base=public_base(request),
            actor=acting_user(request),
            request_id=request_id(request),
        )
    except ValidationError as exc:
        messages.error(request, "; ".join(exc.messages))
    except PermissionDenied:
        raise
    else:
        messages.success(request, f"Saved Quiver's client id at {auth.issuer}.")
    return redirect("sources:source-detail", source_id=source.pk)


def _throttled(request: HttpRequest) -> HttpResponse | None:
    try:
        charge(
            f"vault:{client_address(request)}",
            ATTEMPTS_PER_MINUTE,
            1,
            what="connection attempts a minute from one address",
        )
    except Throttled as exc:
        response = render(request, "429.html", {"detail": exc.detail}, status=429)
        response["Retry-After"] = str(int(getattr(exc, "wait", None) or 60))
        return response
    return None
