"""Every endpoint keeps its contract, read from the URL configuration.

tests/access/endpoints.py walks every URL pattern (API and console) and every
method its view allows; each operation must have its contract in
tests/access/endpoint_contracts.py, so nobody adds an endpoint without one (an
unclassified operation fails ``test_every_operation_has_a_contract``). Then,
against one world of objects (tests/access/endpoint_world.py), each write is
tried four ways:

* signed out: refused (401, 403 or the sign-in page), nothing changed;
* by an outsider (the same scope limited to another catalog, or a signed-in
  caller without the scope): 403 or 404, nothing changed;
* by a caller who may, with a budget of one write a minute: it succeeds and its
  audit row, carrying this request's id, is already written when the answer
  comes (in the request's own transaction: a row left for after the commit
  would not be there yet), or the contract says why it writes none;
* the same again: 429, nothing written (every write is throttled).

Each read is tried signed out (refused unless public), by an outsider (403 or
404) and by a caller who may (200)."""

from __future__ import annotations

from tests.access.contract_checks import ContractChecks, add_tests
from tests.access.endpoint_contracts import CONTRACTS
from tests.access.endpoints import operations


def test_every_operation_has_a_contract():
    found, undeclared = operations()
    assert undeclared == [], "function views must name their methods"
    names = {f"{op.method} {op.name}" for op in found}
    assert sorted(names - set(CONTRACTS)) == [], "operations without a contract"
    assert sorted(set(CONTRACTS) - names) == [], "contracts of no operation"


class ApiEndpoints(ContractChecks):
    """Each operation of the API (under /api/) keeps its contract."""


add_tests(ApiEndpoints, lambda op: op.route.startswith("api/"))
