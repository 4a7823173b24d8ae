"""Console views every app's pages share, written once so that no copy of one
drifts from another (a delete that is rate limited in one app and not in the
next)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, Protocol

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from config.http import request_id
from config.pages import acting_user
from config.ratelimit import rate_limited


class CatalogObject(Protocol):
    """An object that belongs to one catalog (a source, a webhook)."""

    catalog: Any


def deleting_view(
    *,
    find: Callable[[Any, int], CatalogObject],
    delete: Callable[..., object],
    done: Callable[[Any], str],
    back: str,
) -> Callable[..., HttpResponse]:
    """A console POST that deletes one object of a catalog: ``find`` looks it up
    for the person (404 when they may not manage it), ``delete`` is its service
    (audited, given the actor and the request's id), every POST costs one of the
    person's rate limit; then back to the catalog's list (``back``, a URL name
    taking the slug) with ``done``'s message."""

    @require_POST
    @login_required
    @rate_limited
    def view(request: HttpRequest, **kwargs: int) -> HttpResponse:
        [object_id] = kwargs.values()
        found = find(request.user, object_id)
        slug = found.catalog.slug
        rid: uuid.UUID | None = request_id(request)
        delete(found, actor=acting_user(request), request_id=rid)
        messages.success(request, done(found))
        return redirect(back, slug=slug)

    return view
