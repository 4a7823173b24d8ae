"""Tool calls on the audit console: the ``outcome`` filter (console, API), the
dashboard's counts by outcome, the selection page's calls, and the lines that say
what a ``tool_call`` or ``approval`` event records."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from audit.choices import EventType
from audit.models import AuditEvent
from audit.services import record_event
from compliance import display
from compliance.dashboard import build_dashboard, preset_window
from compliance.dashboard_rollup import summary_dashboard
from tests.calls.approval_rows import record_call
from tests.factories import make_user

pytestmark = pytest.mark.django_db
API = "/api/v1/audit/"
OUTCOMES = ("ran", "refused", "pending", "denied", "failed", "timed_out")


@pytest.fixture
def bot():
    return make_user("api:files-bot")


@pytest.fixture
def calls(bot):
    """One call of each outcome, plus a second refused one."""
    made = {outcome: record_call(bot, outcome=outcome) for outcome in OUTCOMES}
    record_call(bot, outcome="refused", reason="not offered")
    return made


def selection_event(actor, selection_id: uuid.UUID) -> AuditEvent:
    return record_event(
        EventType.SELECTION,
        actor=actor,
        request_id=uuid.uuid4(),
        catalog_slug="default",
        summary="a selection",
        input={"request": {"query": "delete the report"}},
        output={"tools": [{"name": "delete_file"}], "excluded": []},
        selection_id=selection_id,
    )


@pytest.mark.parametrize("outcome", OUTCOMES)
def test_the_api_filters_tool_calls_by_outcome(as_user, compliance, calls, outcome):
    body = as_user(compliance).get(API, {"outcome": outcome}).json()

    assert {row["output"]["outcome"] for row in body["results"]} == {outcome}
    assert body["count"] == (2 if outcome == "refused" else 1)


def test_event_type_tool_call_lists_every_call_and_nothing_else(
    as_user, compliance, calls, bot
):
    selection_event(bot, uuid.uuid4())

    body = as_user(compliance).get(API, {"event_type": "tool_call"}).json()

    assert body["count"] == 7
    assert {row["event_type"] for row in body["results"]} == {"tool_call"}


def test_an_unknown_outcome_is_a_400_naming_outcome(as_user, compliance):
    answer = as_user(compliance).get(API, {"outcome": "exploded"})

    assert answer.status_code == 400
    assert "outcome" in answer.json()["detail"]


def test_the_outcome_filter_never_matches_another_event_type(as_user, compliance, bot):
    record_event(
        EventType.VALIDATION,
        actor=bot,
        request_id=uuid.uuid4(),
        catalog_slug="default",
        summary="looks like a call",
        input={},
        output={"outcome": "ran", "valid": True},
    )

    assert as_user(compliance).get(API, {"outcome": "ran"}).json()["count"] == 0


def test_the_console_list_filters_by_outcome(as_compliance, calls):
    page = as_compliance.get("/audit/", {"outcome": "denied"}).content.decode()

    assert "call to delete_file v2 via files denied by a person" in page
    assert "via files timed out" not in page


def test_the_console_offers_the_outcome_filter(as_compliance):
    page = as_compliance.get("/audit/").content.decode()

    assert 'name="outcome"' in page
    assert '<option value="timed_out">timed out</option>' in page


def test_a_call_line_names_the_tool_source_outcome_reason_and_time(bot):
    ran = record_call(bot, outcome="ran", duration_ms=41.6)
    refused = record_call(
        bot, outcome="refused", reason="arguments: 'path' is required"
    )

    assert (
        display.describe(ran)
        == "agent files-bot: call to delete_file v2 via files ran (42 ms)"
    )
    assert display.describe(refused) == (
        "agent files-bot: call to delete_file v2 via files refused: "
        "arguments: 'path' is required"
    )


def test_a_call_line_reads_a_row_missing_keys(bot):
    event = record_event(
        EventType.TOOL_CALL,
        actor=bot,
        request_id=None,
        summary="x",
        input={},
        output={},
    )

    assert display.describe(event) == "agent files-bot: call to ? ?"


@pytest.mark.parametrize(
    ("status", "actor", "line"),
    [
        (
            "requested",
            "api:files-bot",
            "agent files-bot: asked a person to approve delete_file",
        ),
        (
            "approved",
            "ann",
            "ann: approved delete_file (requested by agent files-bot): fine",
        ),
        (
            "denied",
            "ann",
            "ann: denied delete_file (requested by agent files-bot): fine",
        ),
        ("used", "api:files-bot", "agent files-bot: used the approval of delete_file"),
    ],
)
def test_an_approval_line_says_what_happened_to_it(status, actor, line):
    event = record_event(
        EventType.APPROVAL,
        actor=make_user(actor),
        request_id=None,
        summary=f"delete_file {status}",
        input={"tool": "delete_file", "requester": "api:files-bot"},
        output={"status": status, "reason": "fine"},
    )

    assert display.describe(event) == line


def test_the_dashboard_counts_calls_by_outcome(calls):
    board = build_dashboard(AuditEvent.objects.all(), preset_window("24h"))

    assert board.calls["total"] == 7
    assert board.calls["refused"] == 2
    assert all(
        board.calls[outcome] == 1 for outcome in OUTCOMES if outcome != "refused"
    )
    assert not board.empty


def test_the_summary_dashboard_counts_the_same_calls(calls):
    window = preset_window("24h")

    assert (
        summary_dashboard(None, window).calls
        == build_dashboard(AuditEvent.objects.all(), window).calls
    )
    assert summary_dashboard(["billing"], window).calls["total"] == 0


def test_calls_outside_the_range_are_not_counted(bot):
    AuditEvent.objects.create(
        event_type=EventType.TOOL_CALL,
        actor_name="api:files-bot",
        request_id=uuid.uuid4(),
        catalog_slug="default",
        summary="delete_file ran",
        input={"tool": "delete_file"},
        output={"outcome": "ran"},
        created=timezone.now() - timedelta(days=3),
    )

    board = build_dashboard(AuditEvent.objects.all(), preset_window("24h"))

    assert board.calls["total"] == 0 and board.empty


def test_the_dashboard_page_shows_the_counts_with_links(as_compliance, calls):
    page = as_compliance.get("/audit/dashboard/", {"range": "24h"}).content.decode()

    assert 'data-testid="calls-total">7<' in page
    assert 'data-testid="calls-refused">2<' in page
    assert "?outcome=timed_out&amp;" in page


def test_the_selection_page_lists_the_calls_made_from_it(as_compliance, bot):
    sid, other = uuid.uuid4(), uuid.uuid4()
    event = selection_event(bot, sid)
    record_call(bot, outcome="ran", selection_id=str(sid))
    record_call(bot, outcome="pending", selection_id=str(sid))
    record_call(bot, outcome="failed", selection_id=str(other))

    page = as_compliance.get(f"/audit/{event.pk}/").content.decode()

    assert 'data-outcome="ran"' in page
    assert 'data-outcome="pending"' in page
    assert 'data-outcome="failed"' not in page


def test_a_selection_without_calls_says_so(as_compliance, bot):
    event = selection_event(bot, uuid.uuid4())

    page = as_compliance.get(f"/audit/{event.pk}/").content.decode()

    assert "No tool was called through Quiver from this selection." in page


def test_a_reader_limited_to_one_catalog_sees_only_its_calls(client, bot):
    from catalog.models import Catalog
    from identity.models import UserCatalogAccess

    Catalog.objects.create(slug="billing", name="Billing")
    reader = make_user("cleo", groups=("compliance",))
    UserCatalogAccess.objects.create(user=reader, catalogs=["billing"])
    record_call(bot, outcome="ran", catalog_slug="default")
    record_call(bot, outcome="ran", catalog_slug="billing")
    client.force_login(reader)

    body = client.get(API, {"outcome": "ran"}).json()

    assert body["count"] == 1 and body["results"][0]["catalog_slug"] == "billing"


def test_a_tool_call_and_an_approval_event_each_have_a_page(as_compliance, bot):
    sid = uuid.uuid4()
    offered = selection_event(bot, sid)
    call = record_call(
        bot,
        outcome="refused",
        reason="arguments: 'path' is required",
        selection_id=str(sid),
    )
    approval = record_event(
        EventType.APPROVAL,
        actor=bot,
        request_id=None,
        catalog_slug="default",
        summary="delete_file requested",
        input={"tool": "delete_file", "requester": "api:files-bot"},
        output={"status": "requested", "reason": ""},
    )

    call_page = as_compliance.get(f"/audit/{call.pk}/").content.decode()
    approval_page = as_compliance.get(f"/audit/{approval.pk}/").content.decode()

    assert "refused: arguments: &#x27;path&#x27; is required" in call_page
    assert f'href="/audit/{offered.pk}/" data-testid="call-selection"' in call_page
    assert "asked a person to approve delete_file" in approval_page


def test_an_approval_step_links_the_other_steps_of_that_approval(as_compliance, bot):
    from calls.decisions import approve
    from tests.calls.approval_rows import make_approval

    pending = make_approval(bot)
    approve(pending, person=make_user("ann", groups=("approver",)), reason="ok")
    decided = AuditEvent.objects.get(event_type=EventType.APPROVAL)
    used = record_event(
        EventType.APPROVAL,
        actor=bot,
        request_id=None,
        catalog_slug="default",
        summary="delete_file used",
        input={"approval_id": str(pending.pk), "tool": "delete_file"},
        output={"status": "used", "reason": ""},
    )

    page = as_compliance.get(f"/audit/{decided.pk}/").content.decode()

    assert f'href="/audit/{used.pk}/"' in page
    assert "used the approval of delete_file" in page


def test_audit_export_takes_the_outcome_filter(calls, tmp_path):
    import json
    from io import StringIO

    from django.core.management import call_command
    from django.core.management.base import CommandError

    out = tmp_path / "calls.jsonl"
    call_command("audit_export", "--outcome", "timed_out", "--out", str(out))

    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [row["output"]["outcome"] for row in rows] == ["timed_out"]
    with pytest.raises(CommandError, match="--outcome"):
        call_command("audit_export", "--outcome", "exploded", stdout=StringIO())


def started_and_ran(bot, **fields):
    """A call that reached its upstream: its ``started`` event and its outcome."""
    start = record_call(bot, outcome="started", **fields)
    return start, record_call(bot, outcome="ran", call_id=start.pk, **fields)


def test_a_call_with_its_start_counts_once_on_the_dashboard(bot):
    started_and_ran(bot)
    record_call(bot, outcome="started")  # still running: no outcome yet

    board = build_dashboard(AuditEvent.objects.all(), preset_window("24h"))

    assert board.calls["total"] == 1 and board.calls["ran"] == 1
    assert board.calls["other"] == 0


def test_the_lines_of_a_start_and_an_interruption_say_what_they_are(bot):
    start = record_call(bot, outcome="started")
    stopped = record_call(
        bot, outcome="interrupted", reason="interrupted: no outcome", call_id=start.pk
    )

    assert display.describe(start) == (
        "agent files-bot: call to delete_file v2 via files started"
    )
    assert display.describe(stopped) == (
        "agent files-bot: call to delete_file v2 via files was interrupted, no "
        f"outcome recorded: interrupted: no outcome [call {start.pk}]"
    )


def test_a_start_and_its_outcome_link_each_other(as_compliance, bot):
    start, ran = started_and_ran(bot)

    start_page = as_compliance.get(f"/audit/{start.pk}/").content.decode()
    ran_page = as_compliance.get(f"/audit/{ran.pk}/").content.decode()

    assert f'href="/audit/{ran.pk}/"' in start_page
    assert f'href="/audit/{start.pk}/"' in ran_page
    assert "Other steps of this call" in ran_page


def test_the_selection_page_shows_a_call_once_by_how_it_ended(as_compliance, bot):
    sid = uuid.uuid4()
    event = selection_event(bot, sid)
    started_and_ran(bot, selection_id=str(sid))
    running = record_call(bot, outcome="started", selection_id=str(sid))

    page = as_compliance.get(f"/audit/{event.pk}/").content.decode()

    assert page.count('data-outcome="ran"') == 1
    assert page.count('data-outcome="started"') == 1  # the one still running
    assert f"/audit/{running.pk}/" in page


def test_the_outcome_filter_offers_started_and_interrupted(as_compliance):
    page = as_compliance.get("/audit/").content.decode()

    assert '<option value="interrupted">interrupted</option>' in page
    assert '<option value="started">started</option>' in page
