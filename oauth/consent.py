"""The authorization endpoint: a signed-in person (by password or single sign-on,
whatever signed them in) approves or denies a client.

The request is checked first (authlib: the client, the exact redirect URI, the
code response type, the scope, PKCE S256; then the resource, RFC 8707) and a
client asking for a catalog, role or unsafe tools the person does not hold is
refused, never quietly narrowed. A refusal is an ``oauth_refused`` row: sent
back to the client's redirect URI once that URI is known to be the client's
(with ``state`` and ``iss``), else shown to the person, never redirected. On
approval the person's choices (never more than they hold) become the
connection's policy, and the code goes to the redirect URI."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from authlib.oauth2 import OAuth2Error
from authlib.oauth2.rfc6749 import InvalidScopeError
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from catalog.models import Catalog
from config.csp import policy_with_form_target
from config.http import request_id
from config.pages import render_page
from config.retries import RETRY_AFTER_S
from identity.access import Access, access_for, key_within
from oauth.forms import ConsentForm
from oauth.models import OAuthClient
from oauth.registry import ClientProblem, find_client
from oauth.roles import roles_held
from oauth.scopes import Requested, read_scope
from oauth.server import QuiverServer
from oauth.services.connections import (
    Policy,
    approve_connection,
    client_record,
    record_denial,
)
from oauth.services.refusals import NotRecorded, record_refusal
from oauth.tokens import Grantee

TEMPLATE = "oauth/consent.html"


def authorize(request: HttpRequest) -> HttpResponse:
    server = QuiverServer(request)
    person = request.user
    try:
        grant = server.get_consent_grant(request, end_user=person)
        requested = read_scope(grant.request.scope)
        _refuse_more_than_held(grant, person, requested)
    except OAuth2Error as error:
        return _refused(request, server, error)
    client: OAuthClient = grant.request.client
    access = access_for(person)
    roles = roles_held(access)
    choices = _catalog_choices(access)
    if request.method != "POST":
        form = ConsentForm(
            initial=ConsentForm.initial_for(requested, access, roles),
            access=access,
            catalogs=choices,
            roles=roles,
        )
        return _page(request, client, grant, requested, form)
    if request.POST.get("decision") != "approve":
        record_denial(
            client,
            person=person,
            scope=requested.endpoint_scope,
            request_id=request_id(request),
        )
        return server.create_authorization_response(request, None, grant)
    form = ConsentForm(request.POST, access=access, catalogs=choices, roles=roles)
    if not form.is_valid():
        return _page(request, client, grant, requested, form, status=400)
    try:
        connection = approve_connection(
            client,
            person=person,
            policy=form.policy(),
            scope=requested.endpoint_scope,
            request_id=request_id(request),
        )
    except PermissionDenied as exc:
        field = str(exc).split(":", 1)[0]
        form.add_error(field if field in form.fields else None, str(exc))
        return _page(request, client, grant, requested, form, status=403)
    return server.create_authorization_response(request, Grantee(connection), grant)


def _refuse_more_than_held(grant: Any, person: Any, requested: Requested) -> None:
    """``invalid_scope`` when the client asks for more than the person holds."""
    access = access_for(person)
    asked = Policy(
        catalogs=requested.catalogs
        if requested.catalogs is not None
        else access.catalogs,
        roles=requested.roles or (),
        allow_unsafe=requested.unsafe,
    )
    problem = key_within(access, asked.grant())
    if problem:
        raise InvalidScopeError(
            f"scope: asks for more than {person.get_username()} holds ({problem})",
            redirect_uri=grant.redirect_uri,
            state=grant.request.payload.state,
        )


def _refused(
    request: HttpRequest, server: QuiverServer, error: OAuth2Error
) -> HttpResponse:
    """Record the refusal; send it to the client's redirect URI when that URI
    was checked as the client's, else show it here."""
    client = _client_named(request.GET.get("client_id", ""))
    try:
        record_refusal(
            str(error.error),
            str(error.description or error.error),
            actor=request.user,
            where=request.path,
            request_id=request_id(request),
            client=client_record(client) if client is not None else None,
        )
    except NotRecorded as exc:
        response = render(request, "503.html", {"detail": str(exc)}, status=503)
        response["Retry-After"] = str(RETRY_AFTER_S)
        return response
    if error.redirect_uri:
        return server.handle_error_response(None, error)
    context = {"error": error.error, "description": error.description, "client": client}
    return render_page(request, "oauth/refused.html", context, status=400)


def _client_named(client_id: str) -> OAuthClient | None:
    try:
        return find_client(client_id)
    except ClientProblem:
        return None


def _catalog_choices(access: Access) -> list[tuple[str, str]]:
    catalogs = Catalog.objects.order_by("slug")
    if access.catalogs is not None:
        catalogs = catalogs.filter(slug__in=access.catalogs)
    return [
        (slug, f"{name} ({slug})")
        for slug, name in catalogs.values_list("slug", "name")
    ]


def _page(
    request: HttpRequest,
    client: OAuthClient,
    grant: Any,
    requested: Requested,
    form: ConsentForm,
    *,
    status: int = 200,
) -> HttpResponse:
    context = {
        "client": client,
        "redirect_uri": grant.redirect_uri,
        "requested": requested,
        "form": form,
    }
    response = render_page(request, TEMPLATE, context, status=status)
    response["Cache-Control"] = "no-store"
    # Approving or denying redirects the form's answer to the client.
    response["Content-Security-Policy"] = policy_with_form_target(
        _origin(grant.redirect_uri)
    )
    return response


def _origin(uri: str) -> str:
    parts = urlsplit(uri)
    return f"{parts.scheme}://{parts.netloc}" if parts.netloc else f"{parts.scheme}:"
