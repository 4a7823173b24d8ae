"""The hot path's reads (catalog.reads, SQL made once per process) give what the
querysets they replace give: the same rows, values of the same types, related rows
attached without a later query, and each counted as one query."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from catalog.models import Catalog, Tool
from catalog.reads import catalog_by_slug, tools_named
from identity.models import ApiClient
from identity.reads import client_by_prefix
from identity.services.clients import create_api_client
from selection.models import SelectionSettings
from selection.services.settings import update_selection_settings
from tests.factories import make_sample_catalog, make_user

pytestmark = pytest.mark.django_db


def loaded(found: Any, expected: Any) -> bool:
    """``found``'s loaded fields equal ``expected``'s (the rest load on use)."""
    mine = values(found)
    return mine == {name: v for name, v in values(expected).items() if name in mine}


def values(instance: Any) -> dict[str, Any]:
    """Every loaded field with its type (an int is not a Decimal, text not JSON)."""
    loaded = instance.get_deferred_fields()
    return {
        field.attname: (type(value).__name__, value)
        for field in instance._meta.concrete_fields
        if field.attname not in loaded
        for value in [getattr(instance, field.attname)]
    }


def test_a_key_reads_as_select_related_reads_it():
    olga = make_user("olga", groups=("admin",))
    parent, _ = create_api_client(
        "parent", "curator", catalogs="*", roles=["ops"], actor=olga
    )
    child, _ = create_api_client(
        "child", "agent", catalogs=["default"], actor=parent.user
    )
    for made in (parent, child):
        expected = ApiClient.objects.select_related("user", "owner").get(pk=made.pk)
        with CaptureQueriesContext(connection) as queries:
            found = client_by_prefix(made.key_prefix)
            assert found is not None
            assert values(found) == values(expected)
            assert loaded(found.user, expected.user)
            assert (found.owner is None) == (expected.owner is None)
            assert found.owner is None or loaded(found.owner, expected.owner)
            assert found.user.api_client is found
            assert found.user.is_authenticated
        assert len(queries) == 1
        assert found.user.email == expected.user.email  # loads on first use


def test_an_unknown_prefix_reads_as_none():
    assert client_by_prefix("qv_nothere") is None


def test_a_catalog_reads_as_the_queryset_reads_it():
    made = make_sample_catalog()
    assert values(catalog_by_slug(made.slug)) == values(Catalog.objects.get(pk=made.pk))
    assert catalog_by_slug("nope") is None


def test_tools_read_as_the_queryset_reads_them():
    catalog = make_sample_catalog()
    names = ["get_weather", "send_email", "not_a_tool"]
    found = {tool.name: tool for tool in tools_named(catalog, names)}
    expected = Tool.objects.filter(catalog=catalog, name__in=names)
    assert set(found) == {"get_weather", "send_email"}
    for tool in expected:
        assert loaded(found[tool.name], tool)
        mine = set(values(found[tool.name]))
        assert {"parameters", "cost_per_call", "version", "content_hash"} <= mine


def test_settings_read_as_the_queryset_reads_them(admin_user):
    catalog = make_sample_catalog()
    assert SelectionSettings.objects.effective_for(catalog)[1] == 0
    update_selection_settings(
        catalog, {"default_scorer": "bm25f", "candidate_pool": 40}, actor=admin_user
    )
    settings, version = SelectionSettings.objects.effective_for(catalog)
    row = SelectionSettings.objects.get(catalog=catalog)
    assert (settings.default_scorer, settings.candidate_pool) == ("bm25f", 40)
    assert version == row.version
