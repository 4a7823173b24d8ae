"""Connected clients in the console: each person sees and revokes the OAuth
clients they approved; admins see and revoke everyone's."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST, require_safe

from config.http import request_id
from config.pages import acting_user, paginate, render_page
from config.ratelimit import rate_limited
from identity.access import access_for
from oauth.models import Connection
from oauth.querysets import connections_visible_to
from oauth.services.connections import revoke_connection

TEMPLATE = "oauth/connection_list.html"


@require_safe
@login_required
def connection_list(request: HttpRequest) -> HttpResponse:
    connections = connections_visible_to(request.user, Connection.objects.all())
    context = {
        "page": paginate(request, connections),
        "everyone": access_for(request.user).is_admin,
    }
    return render_page(request, TEMPLATE, context)


@require_POST
@login_required
@rate_limited
def connection_revoke(request: HttpRequest, public_id: str) -> HttpResponse:
    visible = connections_visible_to(request.user, Connection.objects.all())
    connection = get_object_or_404(visible, public_id=public_id)
    revoke_connection(
        connection, actor=acting_user(request), request_id=request_id(request)
    )
    messages.success(
        request,
        f"Revoked {connection.client.name} for {connection.person_name}: "
        "its tokens no longer work.",
    )
    return redirect("oauth:connection-list")
