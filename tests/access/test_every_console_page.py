"""Each console page and site route keeps its contract (the API's are
tests/access/test_every_endpoint.py's; the checks are described there)."""

from __future__ import annotations

from tests.access.contract_checks import ContractChecks, add_tests


class ConsolePages(ContractChecks):
    """Each operation outside /api/ keeps its contract."""


add_tests(ConsolePages, lambda op: not op.route.startswith("api/"))
