"""The Approvals page (Django's test client): for people with the approval
permission only, arguments escaped, decisions through calls.decisions."""

from __future__ import annotations

import uuid

import pytest

from audit.choices import EventType
from audit.models import AuditEvent
from audit.services import record_event
from calls.models import Approval, ApprovalStatus
from identity.services import create_api_client
from tests.calls.approval_rows import make_approval
from tests.factories import make_user

pytestmark = pytest.mark.django_db
URL = "/approvals/"
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def agent():
    client, _key = create_api_client("files-bot", "agent", catalogs="*")
    return client.user


@pytest.fixture
def approver():
    return make_user("ann", groups=("approver",))


def decide_url(approval: Approval, decision: str) -> str:
    return f"/approvals/{approval.pk}/{decision}/"


def test_the_nav_shows_approvals_only_to_people_with_the_permission(
    client, approver, curator, compliance
):
    for person, shown in ((approver, True), (curator, False), (compliance, False)):
        client.force_login(person)
        page = client.get("/tools/").content.decode()
        assert (f'href="{URL}"' in page) is shown, person


@pytest.mark.parametrize("groups", [(), ("curator",), ("compliance",)])
def test_the_page_is_a_403_without_the_permission(client, groups):
    client.force_login(make_user("pat", groups=groups))

    assert client.get(URL).status_code == 403


def test_the_page_asks_a_signed_out_visitor_to_sign_in(client):
    answer = client.get(URL)

    assert answer.status_code == 302 and "/login/" in answer["Location"]


def test_the_page_lists_the_tool_arguments_agent_and_selection(client, agent, approver):
    selection_id = uuid.uuid4()
    approval = make_approval(
        agent,
        arguments={"path": "<script>alert(1)</script>", "force": True},
        selection_id=selection_id,
    )
    client.force_login(approver)

    page = client.get(URL).content.decode()

    assert approval.tool_name in page
    assert "agent files-bot" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert(1)" not in page
    assert "&quot;force&quot;: true" in page
    assert str(selection_id) in page
    assert str(approval.request_id) in page


def test_the_selection_links_to_its_audit_page_for_a_reader_of_the_audit(client, agent):
    selection_id = uuid.uuid4()
    event = record_event(
        EventType.SELECTION,
        actor=agent,
        request_id=uuid.uuid4(),
        catalog_slug="default",
        summary="a selection",
        input={"request": {"query": "delete the report"}},
        output={"tools": []},
        selection_id=selection_id,
    )
    make_approval(agent, selection_id=selection_id)
    client.force_login(make_user("ada", groups=("admin",)))

    page = client.get(URL).content.decode()

    assert f'href="/audit/{event.pk}/"' in page


def test_an_empty_list_says_so(client, approver):
    client.force_login(approver)

    page = client.get(URL).content.decode()

    assert "Nothing is waiting for approval." in page
    assert "No decision yet." in page


def test_polling_gets_only_the_fragment(client, agent, approver):
    make_approval(agent)
    client.force_login(approver)

    fragment = client.get(URL, **HTMX).content.decode()

    assert fragment.lstrip().startswith('<div id="approvals-live"')
    assert 'hx-trigger="every 5s"' in fragment
    assert "<html" not in fragment


def test_approving_from_the_page_moves_it_to_recent_decisions(client, agent, approver):
    approval = make_approval(agent)
    client.force_login(approver)

    answer = client.post(decide_url(approval, "approve"), {"reason": "fine"})

    assert answer.status_code == 302
    approval.refresh_from_db()
    assert approval.status == ApprovalStatus.APPROVED and approval.reason == "fine"
    page = client.get(URL).content.decode()
    assert "Nothing is waiting for approval." in page
    assert "by ann" in page
    assert AuditEvent.objects.filter(event_type=EventType.APPROVAL).count() == 1


def test_denying_without_a_reason_shows_the_rule(client, agent, approver):
    approval = make_approval(agent)
    client.force_login(approver)

    whole = client.post(decide_url(approval, "deny"), {"reason": ""})
    fragment = client.post(decide_url(approval, "deny"), {"reason": ""}, **HTMX)

    assert whole.status_code == 400
    assert "reason: a denial needs a reason" in whole.content.decode()
    assert fragment.status_code == 200  # htmx swaps only a 2xx answer
    assert "reason: a denial needs a reason" in fragment.content.decode()
    assert Approval.objects.get(pk=approval.pk).status == ApprovalStatus.PENDING


def test_a_second_decision_on_the_page_is_a_409(client, agent, approver):
    approval = make_approval(agent)
    client.force_login(approver)
    client.post(decide_url(approval, "deny"), {"reason": "no"})

    answer = client.post(decide_url(approval, "approve"), {})

    assert answer.status_code == 409
    assert "already denied" in answer.content.decode()


def test_ones_own_request_has_no_buttons_and_a_post_is_refused(client, approver):
    approval = make_approval(approver)
    client.force_login(approver)

    page = client.get(URL).content.decode()
    answer = client.post(decide_url(approval, "approve"), {})

    assert "Your own request" in page
    assert f'id="decide-{approval.pk}"' not in page
    assert answer.status_code == 403
    assert Approval.objects.get(pk=approval.pk).status == ApprovalStatus.PENDING


def test_an_approval_of_another_catalog_is_a_404(client, agent):
    from catalog.models import Catalog
    from identity.models import UserCatalogAccess

    Catalog.objects.create(slug="billing", name="Billing")
    person = make_user("bea", groups=("approver",))
    UserCatalogAccess.objects.create(user=person, catalogs=["billing"])
    approval = make_approval(agent)
    client.force_login(person)

    assert approval.tool_name not in client.get(URL).content.decode()
    assert client.post(decide_url(approval, "approve"), {}).status_code == 404


def test_an_unknown_decision_is_a_404(client, agent, approver):
    approval = make_approval(agent)
    client.force_login(approver)

    assert client.post(decide_url(approval, "maybe"), {}).status_code == 404
    assert client.get(decide_url(approval, "approve")).status_code == 405


def test_a_request_of_a_key_one_made_has_no_buttons(client, approver):
    first, _ = create_api_client("ann-key", "agent", catalogs="*", actor=approver)
    child, _ = create_api_client("ann-child", "agent", catalogs="*", actor=first.user)
    mine = make_approval(child.user)
    client.force_login(approver)

    page = client.get(URL).content.decode()

    assert "Your own request" in page
    assert f'id="decide-{mine.pk}"' not in page


def requests_from_keys(count: int) -> None:
    for _ in range(count):
        key, _ = create_api_client(f"bot-{uuid.uuid4().hex[:8]}", "agent", catalogs="*")
        make_approval(key.user, selection_id=uuid.uuid4())
        make_approval(key.user, status=ApprovalStatus.DENIED)


def test_the_page_costs_the_same_queries_for_three_or_twelve_agents(
    client, approver, django_assert_max_num_queries
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.force_login(approver)
    requests_from_keys(3)
    with CaptureQueriesContext(connection) as few:
        client.get(URL)
    requests_from_keys(9)

    with django_assert_max_num_queries(len(few.captured_queries)):
        page = client.get(URL)

    assert page.content.decode().count('class="small primary"') == 12


def test_the_api_list_costs_the_same_queries_for_three_or_twelve_agents(
    as_user, approver, django_assert_max_num_queries
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    api = as_user(approver)
    requests_from_keys(3)
    with CaptureQueriesContext(connection) as few:
        api.get("/api/v1/approvals/")
    requests_from_keys(9)

    with django_assert_max_num_queries(len(few.captured_queries)):
        body = api.get("/api/v1/approvals/").json()

    assert body["count"] == 24
