"""/api/v1/approvals/: who lists, reads and decides which approvals; bad input is a
4xx naming the field, never a 500."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from audit.choices import EventType
from audit.models import AuditEvent
from calls.models import Approval, ApprovalStatus
from catalog.models import Catalog
from identity.models import UserCatalogAccess
from identity.services import create_api_client
from tests.calls.approval_rows import make_approval
from tests.factories import make_user

pytestmark = pytest.mark.django_db
URL = "/api/v1/approvals/"


@pytest.fixture
def agent():
    client, _key = create_api_client("files-bot", "agent", catalogs="*")
    return client.user


@pytest.fixture
def approver():
    return make_user("ann", groups=("approver",))


def test_an_approver_lists_approvals_with_a_count(as_user, agent, approver):
    make_approval(agent)
    make_approval(agent, status=ApprovalStatus.DENIED)

    body = as_user(approver).get(URL).json()

    assert body["count"] == 2
    first = body["results"][0]
    assert first["requester"] == "api:files-bot"
    assert first["arguments"] == {"path": "/tmp/report.txt"}
    assert {"id", "status", "tool_name", "tool_version", "expires"} <= set(first)


@pytest.mark.parametrize("status", ["pending", "approved", "denied", "expired", "used"])
def test_the_list_filters_by_status(as_user, agent, approver, status):
    for each in ApprovalStatus.values:
        make_approval(agent, status=each)

    body = as_user(approver).get(URL, {"status": status}).json()

    assert body["count"] == 1
    assert body["results"][0]["status"] == status


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"status": "maybe"}, "status"),
        ({"state": "pending"}, "state"),
        ({"page": "x"}, "page"),
    ],
)
def test_a_bad_filter_is_a_400_naming_it(as_user, approver, params, field):
    answer = as_user(approver).get(URL, params)

    assert answer.status_code == 400
    assert field in answer.json()["detail"]


def test_an_approver_of_one_catalog_sees_and_decides_only_its_approvals(as_user, agent):
    billing = Catalog.objects.create(slug="billing", name="Billing")
    person = make_user("bea", groups=("approver",))
    UserCatalogAccess.objects.create(user=person, catalogs=["billing"])
    theirs = make_approval(agent, catalog=billing)
    other = make_approval(agent)
    api = as_user(person)

    assert [row["id"] for row in api.get(URL).json()["results"]] == [str(theirs.pk)]
    assert api.get(f"{URL}{other.pk}/").status_code == 404
    assert api.post(f"{URL}{other.pk}/approve", {}, format="json").status_code == 404
    assert api.post(f"{URL}{theirs.pk}/approve", {}, format="json").status_code == 200
    assert Approval.objects.get(pk=other.pk).status == ApprovalStatus.PENDING


def test_approving_over_the_api_answers_the_approval_and_records_an_event(
    as_user, agent, approver
):
    approval = make_approval(agent)

    answer = as_user(approver).post(
        f"{URL}{approval.pk}/approve", {"reason": "fine"}, format="json"
    )

    assert answer.status_code == 200
    assert answer.json()["status"] == "approved"
    assert answer.json()["decider"] == "ann"
    event = AuditEvent.objects.get(event_type=EventType.APPROVAL)
    assert event.output == {"status": "approved", "reason": "fine"}


def test_denying_without_a_reason_is_a_400_naming_reason(as_user, agent, approver):
    approval = make_approval(agent)
    api = as_user(approver)

    for body in ({}, {"reason": ""}, {"reason": "  "}):
        answer = api.post(f"{URL}{approval.pk}/deny", body, format="json")
        assert answer.status_code == 400, body
        assert "reason" in answer.json()["detail"]

    too_long = api.post(
        f"{URL}{approval.pk}/deny", {"reason": "x" * 2001}, format="json"
    )
    assert too_long.status_code == 400 and "reason" in too_long.json()["detail"]
    assert Approval.objects.get(pk=approval.pk).status == ApprovalStatus.PENDING


@pytest.mark.parametrize(
    "body", [{"reason": None}, {"reason": ["a"]}, {"why": "x"}, [], "x"]
)
def test_a_bad_body_is_a_400_not_a_500(as_user, agent, approver, body):
    approval = make_approval(agent)

    answer = as_user(approver).post(f"{URL}{approval.pk}/deny", body, format="json")

    assert answer.status_code == 400


def test_a_second_decision_is_a_409_naming_status(as_user, agent, approver):
    approval = make_approval(agent)
    api = as_user(approver)
    api.post(f"{URL}{approval.pk}/deny", {"reason": "no"}, format="json")

    answer = api.post(f"{URL}{approval.pk}/approve", {}, format="json")

    assert answer.status_code == 409
    assert answer.json()["fields"] == {"status": [answer.json()["detail"]]}
    assert "already denied" in answer.json()["detail"]


def test_an_expired_approval_cannot_be_approved(as_user, agent, approver):
    approval = make_approval(agent, expires_in=timedelta(minutes=-1))

    answer = as_user(approver).post(f"{URL}{approval.pk}/approve", {}, format="json")

    assert answer.status_code == 409 and "expired" in answer.json()["detail"]


def test_a_person_approving_their_own_request_is_a_403(as_user, approver):
    approval = make_approval(approver)

    answer = as_user(approver).post(f"{URL}{approval.pk}/approve", {}, format="json")

    assert answer.status_code == 403
    assert "requested_by" in answer.json()["detail"]


def test_a_curator_without_the_permission_neither_lists_nor_reads(
    as_user, curator, agent
):
    approval = make_approval(agent)
    api = as_user(curator)

    assert api.get(URL).status_code == 403
    assert api.get(f"{URL}{approval.pk}/").status_code == 404
    assert api.post(f"{URL}{approval.pk}/approve", {}, format="json").status_code == 403


def test_compliance_reads_approvals_but_never_decides(as_user, compliance, agent):
    approval = make_approval(agent)
    api = as_user(compliance)

    assert api.get(URL).json()["count"] == 1
    assert api.get(f"{URL}{approval.pk}/").status_code == 200
    answer = api.post(f"{URL}{approval.pk}/approve", {}, format="json")
    assert answer.status_code == 403 and "permission" in answer.json()["detail"]
    assert Approval.objects.get(pk=approval.pk).status == ApprovalStatus.PENDING


def test_an_agent_key_reads_its_own_approval_by_id_only(with_key, agent):
    api = with_key("agent", "caller-bot")
    own_user = Approval._meta.get_field("requested_by").related_model.objects.get(
        username="api:caller-bot"
    )
    own = make_approval(own_user)
    other = make_approval(agent)

    assert api.get(f"{URL}{own.pk}/").json()["status"] == "pending"
    assert api.get(f"{URL}{other.pk}/").status_code == 404
    assert api.get(URL).status_code == 403
    assert api.get(URL, {"status": "pending"}).status_code == 403


def test_an_agent_key_never_decides_even_its_own_request(with_key):
    api = with_key("agent", "caller-bot")
    own_user = Approval._meta.get_field("requested_by").related_model.objects.get(
        username="api:caller-bot"
    )
    own = make_approval(own_user)

    answer = api.post(f"{URL}{own.pk}/approve", {}, format="json")

    assert answer.status_code == 403
    assert Approval.objects.get(pk=own.pk).status == ApprovalStatus.PENDING


def test_an_admin_key_neither_lists_nor_decides(with_key, agent):
    api = with_key("admin", "root-key", allow_unsafe=True)
    approval = make_approval(agent)

    assert api.get(URL).status_code == 403
    assert api.get(f"{URL}{approval.pk}/").status_code == 404
    assert api.post(f"{URL}{approval.pk}/approve", {}, format="json").status_code == 404


# A fixed unknown UUID: parallel test processes must collect the same test ids.
UNKNOWN = "0f0e5b1c-9a55-4c1f-8d3e-2b7a1c9e4d60"


@pytest.mark.parametrize("ident", ["not-a-uuid", "1", UNKNOWN])
def test_an_unknown_or_malformed_id_is_a_404(as_user, approver, ident):
    assert as_user(approver).get(f"{URL}{ident}/").status_code == 404
    answer = as_user(approver).post(f"{URL}{ident}/approve", {}, format="json")
    assert answer.status_code == 404


def test_signed_out_callers_get_nothing(api, agent):
    approval = make_approval(agent)

    assert api.get(URL).status_code in {401, 403}
    assert api.get(f"{URL}{approval.pk}/").status_code in {401, 403}


def test_who_may_decide_is_checked_before_the_body(as_user, curator, approver, agent):
    approval = make_approval(agent)
    own = make_approval(approver)

    refused = as_user(curator).post(f"{URL}{approval.pk}/deny", {}, format="json")
    own_answer = as_user(approver).post(f"{URL}{own.pk}/deny", {}, format="json")
    unknown = as_user(approver).post(f"{URL}{uuid.uuid4()}/deny", [], format="json")

    assert refused.status_code == 403
    assert own_answer.status_code == 403
    assert "requested_by" in own_answer.json()["detail"]
    assert unknown.status_code == 404
