"""Every console form shows a service's refusal where it belongs, whatever its shape."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from catalog.forms import CatalogForm
from config.forms import ServiceErrorsMixin
from identity.forms import ApiClientForm, PersonForm
from notify.forms import WebhookForm
from sources.forms import SourceForm

pytestmark = pytest.mark.django_db

FORMS: list[type[ServiceErrorsMixin]] = [
    CatalogForm,
    ApiClientForm,
    PersonForm,
    WebhookForm,
    SourceForm,
]


def bound(form_class: type[ServiceErrorsMixin]) -> ServiceErrorsMixin:
    form = form_class(data={})
    form.is_valid()  # cleaned_data exists, as after a view's validation
    return form


@pytest.mark.parametrize("form_class", FORMS, ids=lambda c: c.__name__)
def test_a_refusal_with_no_field_lands_on_the_form(
    form_class: type[ServiceErrorsMixin],
) -> None:
    form = bound(form_class)
    form.add_service_error(ValidationError("the service said no"))
    assert "the service said no" in form.non_field_errors()


@pytest.mark.parametrize("form_class", FORMS, ids=lambda c: c.__name__)
def test_a_refusal_naming_a_field_the_form_lacks_lands_on_the_form(
    form_class: type[ServiceErrorsMixin],
) -> None:
    form = bound(form_class)
    form.add_service_error(ValidationError({"no_such_field": ["not here"]}))
    assert "not here" in form.non_field_errors()


@pytest.mark.parametrize("form_class", FORMS, ids=lambda c: c.__name__)
def test_a_refusal_naming_one_of_its_fields_lands_on_that_field(
    form_class: type[ServiceErrorsMixin],
) -> None:
    form = bound(form_class)
    field = next(iter(form.fields))
    form.add_service_error(ValidationError({field: ["wrong here"]}))
    assert "wrong here" in form.errors[field]
