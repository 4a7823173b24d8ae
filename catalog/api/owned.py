"""The API every kind a catalog owns by name shares (sources, webhooks).

A catalog's list and its add, one object's read, edit and delete: each looks the
object up by ``catalog.owned``'s rule (404 for a catalog the caller cannot see,
403 for one who may not manage the kind), takes its input through the kind's
serializer and writes through the kind's service (which writes the audit row).
Every write costs one of the caller's rate limit, a read nothing. A kind names
its model, serializers and services, and what its answers add (a first sync's
job, a secret shown once); its own actions (sync, rotate) sit beside these.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, ClassVar

from django.core.exceptions import ImproperlyConfigured
from django.db.models import QuerySet
from rest_framework import generics, serializers, status, viewsets
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from catalog.models import Catalog
from catalog.owned import CatalogOwned, get_owned_for_user, owned_of
from config.http import request_id
from config.ratelimit import WriteRateThrottle


class OwnedAccess(generics.GenericAPIView):
    """What the list and the single object share: who may call, what a call
    costs, and the kind's model and input."""

    model: ClassVar[type[CatalogOwned]]
    input_serializer: ClassVar[type[serializers.Serializer]]
    permission_classes = [IsAuthenticated]
    throttle_classes = [WriteRateThrottle]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A kind's answers never name its secret fields: a serializer that
        would is refused when the view is defined, before it answers anyone."""
        super().__init_subclass__(**kwargs)
        model, answer = getattr(cls, "model", None), cls.serializer_class
        if model is None or answer is None:
            return
        shown = getattr(getattr(answer, "Meta", None), "fields", ())
        if shown == "__all__":
            shown = [field.name for field in model._meta.get_fields()]
        leaked = sorted(set(model.secret_fields) & set(shown))
        if leaked:
            raise ImproperlyConfigured(
                f"{cls.__name__}: {answer.__name__} answers with the secret "
                f"fields of {model.__name__}: {', '.join(leaked)}"
            )

    def given(self, *, partial: bool = False) -> dict[str, Any]:
        """The request's body, checked by type (400 naming the field)."""
        given = self.input_serializer(data=self.request.data, partial=partial)
        given.is_valid(raise_exception=True)
        return dict(given.validated_data)

    def request_id(self) -> uuid.UUID | None:
        return request_id(self.request)


class OwnedList(OwnedAccess, generics.ListCreateAPIView):
    """A catalog's objects of one kind; POST adds one through ``add``."""

    def get_queryset(self) -> QuerySet[Any]:
        if getattr(self, "swagger_fake_view", False):  # the schema: no caller
            return self.model._default_manager.none()
        return owned_of(self.model, self.request.user, self.kwargs["slug"])[1]

    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        catalog, _rows = owned_of(self.model, request.user, kwargs["slug"])
        return self.add(catalog, self.given())

    def add(self, catalog: Catalog, data: dict[str, Any]) -> Response:
        """The kind's create service, and its 201."""
        raise NotImplementedError


class OwnedViewSet(OwnedAccess, viewsets.GenericViewSet):
    """One object of a kind: read, edit (``edit``: the kind's update service and
    its answer), delete (``delete_service``: the kind's; never named ``delete``,
    which a view would take for the handler of the HTTP method)."""

    delete_service: ClassVar[Callable[..., object]]

    def get_queryset(self) -> QuerySet[Any]:
        return self.model._default_manager.none()

    def get_object(self) -> Any:
        return get_owned_for_user(self.model, self.request.user, self.kwargs["pk"])

    def retrieve(self, request: Request, pk: str) -> Response:
        return Response(self.get_serializer_class()(self.get_object()).data)

    def partial_update(self, request: Request, pk: str) -> Response:
        found = self.get_object()
        return self.edit(found, self.given(partial=True))

    def edit(self, found: Any, changes: dict[str, Any]) -> Response:
        """The kind's update service, and its answer."""
        raise NotImplementedError

    def destroy(self, request: Request, pk: str) -> Response:
        found = self.get_object()
        type(self).delete_service(
            found, actor=request.user, request_id=self.request_id()
        )
        return Response(status=status.HTTP_204_NO_CONTENT)
