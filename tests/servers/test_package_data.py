"""The official servers' tests share sources committed for the package;
the database tests that follow in the same process still find the rows that
were there before (the migrations' groups and their permissions, the default
catalog): a flush alone took them too."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission

from catalog.models import Catalog
from tests.factories import make_user
from tests.servers.conftest import committed_for_the_package

KEPT = "kept-from-before"


def rows() -> dict[str, Any]:
    groups = Group.objects.prefetch_related("permissions")
    return {
        "groups": {
            group.name: sorted(p.codename for p in group.permissions.all())
            for group in groups
        },
        "catalogs": sorted(Catalog.objects.values_list("slug", flat=True)),
    }


@pytest.mark.django_db(transaction=True)
def test_rows_committed_for_the_package_go_and_those_from_before_stay() -> None:
    """Transactional (its writes commit), so ordered after the other flushes:
    the migrations' rows may be gone already; a group committed before stands
    in for them."""
    kept = Group.objects.create(name=KEPT)
    kept.permissions.add(Permission.objects.get(codename="decide_approval"))
    before = rows()

    with committed_for_the_package():
        make_user("passing-through", groups=(KEPT, "newcomers"))
        Group.objects.get(name=KEPT).permissions.clear()

    assert rows() == before
    assert rows()["groups"][KEPT] == ["decide_approval"]
    assert not Group.objects.filter(name="newcomers").exists()
