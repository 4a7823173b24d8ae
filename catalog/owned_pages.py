"""Console pages every kind a catalog owns by name shares (sources, webhooks).

A catalog's list with the add form, and one object's page with the edit form:
each looks the object up by ``catalog.owned``'s rule (404 for a catalog the
person cannot see, the styled 403 for one who may not manage the kind), writes
through the kind's service (which writes the audit row) and shows the service's
refusals on the form's fields. ``console_page`` serves them as every console
page is served: the methods named (405 otherwise), signed in, a POST costing one
of the person's rate limit. The delete is ``config.console_views.deleting_view``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, cast

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views import View
from django.views.decorators.http import require_http_methods

from catalog.models import Catalog
from catalog.owned import CatalogOwned, get_owned_for_user, noun, owned_of
from config.forms import ServiceErrorsMixin
from config.http import request_id
from config.pages import acting_user, render_page
from config.ratelimit import rate_limited


def console_page(view_class: type[View]) -> Callable[..., HttpResponse]:
    """``view_class`` behind the console's guards, in the order every console
    function view has them."""
    methods = [method.upper() for method in view_class.http_method_names]
    view = rate_limited(cast(Callable[..., HttpResponse], view_class.as_view()))
    return require_http_methods(methods)(login_required(view))


class OwnedPage(View):
    """What both pages share: the kind, its form and how a write is called."""

    http_method_names = ["get", "head", "post"]
    model: ClassVar[type[CatalogOwned]]
    form_class: ClassVar[type[ServiceErrorsMixin]]
    template_name: ClassVar[str]
    request: HttpRequest

    def write(self, service: Callable[..., Any], *args: Any, **data: Any) -> Any:
        """The kind's service, as this person and with the request's id."""
        actor, rid = acting_user(self.request), request_id(self.request)
        return service(*args, **data, actor=actor, request_id=rid)


class OwnedListPage(OwnedPage):
    """A catalog's objects of one kind and the add form; a POST adds one through
    ``create``, then ``created`` answers."""

    create: ClassVar[Callable[..., Any]]

    def get(self, request: HttpRequest, slug: str) -> HttpResponse:
        catalog, rows = owned_of(self.model, request.user, slug)
        return self.page(catalog, rows, self.form_class())

    def post(self, request: HttpRequest, slug: str) -> HttpResponse:
        catalog, rows = owned_of(self.model, request.user, slug)
        form = self.form_class(request.POST)
        if form.is_valid():
            try:
                made = self.write(type(self).create, catalog, **form.cleaned_data)
            except ValidationError as exc:
                form.add_service_error(exc)
            else:
                return self.created(catalog, rows, made)
        return self.page(catalog, rows, form)

    def page(
        self, catalog: Catalog, rows: QuerySet[Any], form: Any, **more: Any
    ) -> HttpResponse:
        plural = str(self.model._meta.verbose_name_plural)
        context = {"catalog": catalog, plural: rows, "form": form, **more}
        return render_page(self.request, self.template_name, context)

    def created(self, catalog: Catalog, rows: QuerySet[Any], made: Any) -> HttpResponse:
        """The answer once ``create`` made one."""
        raise NotImplementedError


class OwnedDetailPage(OwnedPage):
    """One object and its edit form; a POST changes it through ``update`` (the
    form's ``fixed`` fields are shown, never sent), then back to this page."""

    update: ClassVar[Callable[..., Any]]
    pk_url_kwarg: ClassVar[str]
    detail_url: ClassVar[str]
    fixed: ClassVar[tuple[str, ...]] = ()

    def found(self) -> Any:
        object_id = self.kwargs[self.pk_url_kwarg]
        return get_owned_for_user(self.model, self.request.user, object_id)

    def get(self, request: HttpRequest, **kwargs: int) -> HttpResponse:
        found = self.found()
        return self.page(found, self.form_class(initial=self.initial(found)))

    def post(self, request: HttpRequest, **kwargs: int) -> HttpResponse:
        found = self.found()
        form = self.form_class(request.POST, initial=self.initial(found))
        if form.is_valid():
            changes = {
                k: v for k, v in form.cleaned_data.items() if k not in self.fixed
            }
            try:
                done = self.write(type(self).update, found, changes)
            except ValidationError as exc:
                form.add_service_error(exc)
            else:
                name = form.cleaned_data["name"]
                messages.success(request, f"Saved {noun(self.model)} {name}.")
                self.updated(done)
                return redirect(self.detail_url, **{self.pk_url_kwarg: found.pk})
        return self.page(found, form)

    def initial(self, found: Any) -> dict[str, Any]:
        """The edit form's values: what the object shows (never a secret)."""
        raise NotImplementedError

    def page(self, found: Any, form: Any) -> HttpResponse:
        raise NotImplementedError

    def updated(self, done: Any) -> None:
        """What else the person is told once ``update`` saved (nothing here)."""
