"""GET /api/v1/catalogs/ is a page of an ordered list: slug order, no warning."""

from __future__ import annotations

import warnings

import pytest
from django.core.paginator import UnorderedObjectListWarning

from catalog.models import Catalog

pytestmark = pytest.mark.django_db


def test_the_catalog_list_is_paged_in_slug_order_without_a_warning(with_key):
    for slug in ("zeta", "alpha", "mid"):
        Catalog.objects.create(slug=slug, name=slug.title())
    api = with_key("curator")

    with warnings.catch_warnings():
        warnings.simplefilter("error", UnorderedObjectListWarning)
        response = api.get("/api/v1/catalogs/")

    assert response.status_code == 200, response.json()
    slugs = [catalog["slug"] for catalog in response.json()["results"]]
    assert slugs == ["alpha", "default", "mid", "zeta"]
