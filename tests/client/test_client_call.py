"""quiver_client's call(): a tool run through Quiver against a real upstream MCP
server; a call that needs approval raises PendingApproval, and runs once approved."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.utils import timezone
from quiver_client import (
    AsyncQuiver,
    BadRequest,
    NeedsAuthorization,
    NotFound,
    PendingApproval,
    PermissionDenied,
    Quiver,
)

from calls.models import Approval
from catalog.services import ensure_default_catalog
from tests.aio import run_async
from tests.calls.conftest import link_source
from tests.factories import make_client_key
from tests.upstream import Upstream, running_upstream
from tests.vault.rows import make_personal_source

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    with running_upstream() as upstream:
        yield upstream


@pytest.fixture
def quiver_url(live_server: Any, upstream: Upstream) -> str:
    link_source(upstream)
    return str(live_server.url)


def test_call_answers_the_upstreams_result_typed(quiver_url, upstream):
    key = make_client_key("agent-client-call", "agent")
    with Quiver(quiver_url, key) as quiver:
        result = quiver.call("weather.get_forecast", {"city": "Bern", "days": 1})
    assert result["outcome"] == "ran"
    assert result["is_error"] is False
    assert result["structured_content"] == {
        "city": "Bern",
        "forecast": ["day 1: sunny, 21 C"],
    }
    assert result["call_id"]
    assert len(upstream.calls) == 1


def test_a_call_needing_approval_raises_pending_approval_then_runs(
    quiver_url, upstream
):
    key = make_client_key("agent-client-approve", "agent")
    with Quiver(quiver_url, key) as quiver:
        with pytest.raises(PendingApproval) as caught:
            quiver.call("weather.delete_file", {"path": "/a"})
        approval_id = caught.value.approval_id
        assert caught.value.answer["status"] == "pending_approval"
        assert upstream.calls == []
        Approval.objects.filter(pk=approval_id).update(
            status="approved", decided=timezone.now()
        )
        result = quiver.call(
            "weather.delete_file", {"path": "/a"}, approval_id=approval_id
        )
    assert result["outcome"] == "ran"
    assert result["approval_id"] == approval_id
    assert [call.name for call in upstream.calls] == ["delete_file"]


def test_the_async_client_calls_too_and_refusals_raise_the_apis_errors(
    quiver_url, upstream
):
    key = make_client_key("agent-client-async", "agent")

    async def main() -> Any:
        async with AsyncQuiver(quiver_url, key) as quiver:
            ran = await quiver.call("weather.get_forecast", {"city": "Oslo"})
            with pytest.raises(BadRequest) as bad:
                await quiver.call("weather.get_forecast", {"city": 3})
            with pytest.raises(NotFound):
                await quiver.call("weather.nothing", {})
            return ran, bad.value

    ran, bad = run_async(main())
    assert ran["outcome"] == "ran"
    assert bad.detail.startswith("arguments/city")
    assert bad.body["outcome"] == "refused"
    assert len(upstream.calls) == 1


def test_a_tool_whose_server_acts_for_each_person_raises_needs_authorization(
    quiver_url, upstream
):
    tool = make_personal_source(ensure_default_catalog())
    key = make_client_key("agent-client-nobody", "agent")
    with Quiver(quiver_url, key) as quiver, pytest.raises(NeedsAuthorization) as caught:
        quiver.call(tool.name, {})
    error = caught.value
    assert isinstance(error, PermissionDenied)
    assert (error.status_code, error.error) == (403, "needs_authorization")
    assert error.authorization_url is None  # the key acts for no person
    assert "acts for no person" in error.detail
    assert error.body["outcome"] == "needs_authorization"
