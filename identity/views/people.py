"""People in the console (admins): list, create, set groups and catalogs, deactivate.

Every action is a service of identity.services.people (audited there); a new
person's one-time password is shown once, on the page that made them."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods, require_POST

from config.http import request_id
from config.pages import acting_user, paginate, render_page
from config.ratelimit import rate_limited
from identity.access import access_for
from identity.access_people import Refused
from identity.forms import PersonForm
from identity.models import UserCatalogAccess
from identity.services.people import (
    create_person,
    get_person_for_user,
    manageable,
    management_problem,
    people_visible_to,
    person_catalogs,
    set_person_active,
    update_person,
)

VIA = "people page"


def _require_admin(request: HttpRequest) -> None:
    if not access_for(request.user).is_admin:
        raise PermissionDenied("managing people needs the admin scope")


@require_http_methods(["GET", "HEAD", "POST"])
@login_required
@rate_limited
def person_list(request: HttpRequest) -> HttpResponse:
    """Every person the admin may manage, with groups, catalogs and state; the
    form makes a new one."""
    _require_admin(request)
    form = PersonForm(request.POST or None)
    if request.method != "POST":
        return _list_page(request, form)
    if not form.is_valid():
        return _list_page(request, form, status=400)
    try:
        person, password = create_person(
            form.cleaned_data["username"],
            **form.granted(),
            actor=acting_user(request),
            via=VIA,
            request_id=request_id(request),
        )
    except (ValidationError, Refused) as exc:
        return _list_page(request, form, status=form.add_refusal(exc))
    context = {"new_password": password, "new_person": person.username}
    return _list_page(request, PersonForm(), **context)


@require_http_methods(["GET", "HEAD", "POST"])
@login_required
@rate_limited
def person_edit(request: HttpRequest, person_id: int) -> HttpResponse:
    """One person's groups and catalog limit."""
    _require_admin(request)
    person = get_person_for_user(request.user, person_id)
    problem = management_problem(acting_user(request), person)
    if problem:
        raise PermissionDenied(problem)
    initial = PersonForm.initial_of(
        person.groups.values_list("name", flat=True), person_catalogs(person)
    )
    form = PersonForm(request.POST or None, initial=initial, new=False)
    page = _edit_page(person)
    if request.method != "POST":
        return page(request, form)
    if not form.is_valid():
        return page(request, form, status=400)
    try:
        update_person(
            person,
            **form.granted(),
            actor=acting_user(request),
            via=VIA,
            request_id=request_id(request),
        )
    except (ValidationError, Refused) as exc:
        return page(request, form, status=form.add_refusal(exc))
    messages.success(request, f"Saved the access of {person.username}.")
    return redirect("identity:person-list")


@require_POST
@login_required
@rate_limited
def person_active(request: HttpRequest, person_id: int) -> HttpResponse:
    """Deactivate (``active=0``) or reactivate (``active=1``) a person."""
    _require_admin(request)
    person = get_person_for_user(request.user, person_id)
    active = request.POST.get("active") == "1"
    try:
        set_person_active(
            person,
            active,
            actor=acting_user(request),
            via=VIA,
            request_id=request_id(request),
        )
    except Refused as exc:
        return _list_page(request, PersonForm(), error=str(exc), status=403)
    except ValidationError as exc:
        error = "; ".join(exc.messages)
        return _list_page(request, PersonForm(), error=error, status=400)
    state = "reactivated" if active else "deactivated: they can no longer sign in"
    messages.success(request, f"{person.username} {state}.")
    return redirect("identity:person-list")


def _list_page(
    request: HttpRequest, form: PersonForm, *, status: int = 200, **notes: Any
) -> HttpResponse:
    people = people_visible_to(request.user).prefetch_related("groups")
    page = paginate(request, people.select_related("catalog_access"))
    shown = list(page.object_list)
    mine = manageable(acting_user(request), shown)
    rows = [(person, _limit(person), person.pk in mine) for person in shown]
    context = {"page": page, "rows": rows, "form": form, **notes}
    return render_page(request, "identity/people.html", context, status=status)


def _edit_page(person: Any) -> Any:
    def render(
        request: HttpRequest, form: PersonForm, *, status: int = 200
    ) -> HttpResponse:
        context = {"person": person, "form": form}
        return render_page(request, "identity/person_edit.html", context, status=status)

    return render


def _limit(person: Any) -> list[str] | None:
    """The person's catalogs from the joined row; None: all catalogs."""
    try:
        row = person.catalog_access
    except UserCatalogAccess.DoesNotExist:
        return None
    return list(row.catalogs)
