"""``tool_visible`` (the call path's check on a tool it read with SQL made once)
gives exactly what ``Tool.objects.visible_to`` gives, for every kind of caller and
every stored shape of ``allowed_roles``, odd ones included."""

from __future__ import annotations

from itertools import product
from typing import Any

import pytest

from catalog.models import Tool
from catalog.querysets import tool_visible
from catalog.services import ensure_default_catalog
from identity.access import Access
from tests.factories import make_tool

# As a curator could save them, and as a write around the services could leave
# them (jsonb's ?| matches an object's keys and a bare string, never a number).
STORED_ROLES: list[Any] = [
    [],
    ["ops"],
    ["billing"],
    ["ops", "billing"],
    ["OPS"],
    [1, "x"],
    {"ops": True},
    "ops",
    "",
    {},
    7,
]
SCOPES = ("agent", "curator", "compliance", "admin")
ROLES: list[tuple[str, ...] | None] = [None, (), ("ops",), ("billing", "x"), ("1",)]


@pytest.fixture
def tools(db: None) -> list[Tool]:
    catalog = ensure_default_catalog()
    made = []
    for number, (roles, safe) in enumerate(product(STORED_ROLES, (True, False))):
        tool = make_tool(catalog, f"tool_{number}", safe=safe)
        Tool.objects.filter(pk=tool.pk).update(allowed_roles=roles)
        made.append(tool)
    return list(Tool.objects.filter(pk__in=[tool.pk for tool in made]))


def test_the_rule_in_python_is_the_querysets_rule_for_every_caller(tools):
    ids = [tool.pk for tool in tools]
    checked = 0
    for scope, roles, unsafe in product(SCOPES, ROLES, (True, False)):
        access = Access(scope=scope, catalogs=None, roles=roles, allow_unsafe=unsafe)
        by_query = set(
            Tool.objects.visible_to(access)
            .filter(pk__in=ids)
            .values_list("pk", flat=True)
        )
        by_python = {tool.pk for tool in tools if tool_visible(access, tool)}
        assert by_python == by_query, (scope, roles, unsafe)
        checked += 1
    assert checked == len(SCOPES) * len(ROLES) * 2


def test_an_agent_sees_neither_an_unsafe_tool_nor_one_of_other_roles(tools):
    agent = Access(scope="agent", catalogs=None, roles=("ops",), allow_unsafe=False)
    seen = [tool for tool in tools if tool_visible(agent, tool)]
    assert seen, "an agent with a role sees the open and its role's safe tools"
    assert all(tool.safe for tool in seen)
    assert all(tool.allowed_roles == [] or "ops" in tool.allowed_roles for tool in seen)
