"""calls.decisions: a person approves or denies a pending call, once, with one
audit event in the same transaction; never their own request."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import transaction

from audit.choices import EventType
from audit.models import AuditEvent
from calls.decisions import DecisionRefused, approve, deny
from calls.models import Approval, ApprovalStatus
from config.exceptions import Conflict
from identity.services import create_api_client
from tests.calls.approval_rows import make_approval
from tests.factories import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent():
    client, _key = create_api_client("files-bot", "agent", catalogs="*")
    return client.user


@pytest.fixture
def approver():
    return make_user("ann", groups=("approver",))


def approval_events() -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(event_type=EventType.APPROVAL).order_by("id"))


def test_approving_records_who_and_when_and_keeps_the_original_expiry(agent, approver):
    approval = make_approval(agent)
    expires = approval.expires

    row = approve(approval, person=approver, reason="looks right")

    row.refresh_from_db()
    assert row.status == ApprovalStatus.APPROVED
    assert row.decided_by == approver and row.decider_name == "ann"
    assert row.decided is not None and row.reason == "looks right"
    assert row.expires == expires


def test_approving_writes_one_approval_event_naming_the_status_and_reason(
    agent, approver
):
    approval = make_approval(agent)

    approve(approval, person=approver, reason="ok")

    [event] = approval_events()
    assert event.actor_name == "ann"
    assert event.output == {"status": "approved", "reason": "ok"}
    assert event.input["approval_id"] == str(approval.pk)
    assert event.input["requester"] == "api:files-bot"
    assert event.catalog_slug == "default"


def test_denying_needs_a_reason(agent, approver):
    approval = make_approval(agent)

    with pytest.raises(ValidationError) as refused:
        deny(approval, person=approver, reason="   ")

    assert "reason" in refused.value.message_dict
    assert Approval.objects.get(pk=approval.pk).status == ApprovalStatus.PENDING
    assert approval_events() == []


def test_a_reason_is_bounded_to_two_thousand_characters(agent, approver):
    approval = make_approval(agent)

    with pytest.raises(ValidationError) as refused:
        approve(approval, person=approver, reason="x" * 2001)

    assert "reason" in refused.value.message_dict
    deny(approval, person=approver, reason="x" * 2000)
    assert Approval.objects.get(pk=approval.pk).status == ApprovalStatus.DENIED


def test_a_denial_is_recorded_with_its_reason(agent, approver):
    approval = make_approval(agent)

    deny(approval, person=approver, reason="deletes production data")

    [event] = approval_events()
    assert event.output == {"status": "denied", "reason": "deletes production data"}
    assert Approval.objects.get(pk=approval.pk).status == ApprovalStatus.DENIED


@pytest.mark.parametrize("second", [approve, deny])
def test_a_second_decision_is_a_conflict_naming_status(agent, approver, second):
    approval = make_approval(agent)
    approve(approval, person=approver)
    other = make_user("ben", groups=("approver",))

    with pytest.raises(Conflict) as conflict:
        second(approval, person=other, reason="too late")

    assert conflict.value.field == "status"
    assert "already approved" in str(conflict.value)
    assert len(approval_events()) == 1


@pytest.mark.parametrize(
    "status", [ApprovalStatus.USED, ApprovalStatus.EXPIRED, ApprovalStatus.DENIED]
)
def test_only_a_pending_approval_can_be_decided(agent, approver, status):
    approval = make_approval(agent, status=status)

    with pytest.raises(Conflict):
        approve(approval, person=approver)

    assert Approval.objects.get(pk=approval.pk).status == status


def test_a_stale_copy_cannot_decide_twice(agent, approver):
    """The decision reads the row again under a lock, not the caller's copy."""
    approval = make_approval(agent)
    stale = Approval.objects.get(pk=approval.pk)
    deny(approval, person=approver, reason="no")

    with pytest.raises(Conflict):
        approve(stale, person=approver)

    assert Approval.objects.get(pk=approval.pk).status == ApprovalStatus.DENIED


def test_approving_after_the_expiry_expires_it_and_is_a_conflict(agent, approver):
    approval = make_approval(agent, expires_in=timedelta(seconds=-1))

    with pytest.raises(Conflict) as conflict:
        approve(approval, person=approver)

    assert conflict.value.field == "status"
    assert Approval.objects.get(pk=approval.pk).status == ApprovalStatus.EXPIRED
    [event] = approval_events()
    assert event.output["status"] == "expired" and event.actor_name == "system"


def test_a_person_never_approves_their_own_request(approver):
    approval = make_approval(approver)

    with pytest.raises(DecisionRefused, match="requested_by"):
        approve(approval, person=approver)

    assert Approval.objects.get(pk=approval.pk).status == ApprovalStatus.PENDING
    assert approval_events() == []


def test_a_person_never_decides_a_request_of_a_key_they_made(approver):
    key, _ = create_api_client("ann-bot", "agent", catalogs="*", actor=approver)

    approval = make_approval(key.user)

    for decide in (approve, deny):
        with pytest.raises(DecisionRefused, match="requested_by"):
            decide(approval, person=approver, reason="mine")


def test_nor_one_of_a_key_made_by_a_key_they_made(approver):
    first, _ = create_api_client("ann-key", "agent", catalogs="*", actor=approver)
    child, _ = create_api_client("ann-child", "agent", catalogs="*", actor=first.user)
    assert child.parent == first and child.owner is None

    approval = make_approval(child.user)

    with pytest.raises(DecisionRefused, match="requested_by"):
        approve(approval, person=approver)
    # Another approver may.
    approve(approval, person=make_user("ben", groups=("approver",)))


def test_a_deleted_requester_leaves_the_request_to_nobody(approver):
    approval = make_approval(approver)
    Approval.objects.filter(pk=approval.pk).update(requested_by=None)
    approval.refresh_from_db()

    with pytest.raises(DecisionRefused, match="requested_by"):
        deny(approval, person=approver, reason="mine")


@pytest.mark.parametrize("groups", [(), ("curator",), ("compliance",)])
def test_people_without_the_permission_never_decide(agent, groups):
    person = make_user("pat", groups=groups)
    approval = make_approval(agent)

    with pytest.raises(DecisionRefused, match="permission"):
        approve(approval, person=person)


def test_an_api_key_never_decides_even_an_admin_key(agent):
    admin_key, _ = create_api_client(
        "robot-admin", "admin", catalogs="*", allow_unsafe=True
    )
    approval = make_approval(agent)

    with pytest.raises(DecisionRefused, match="person"):
        approve(approval, person=admin_key.user)


def test_an_approver_of_another_catalog_never_decides(agent):
    from catalog.models import Catalog
    from identity.models import UserCatalogAccess

    Catalog.objects.create(slug="billing", name="Billing")
    person = make_user("bea", groups=("approver",))
    UserCatalogAccess.objects.create(user=person, catalogs=["billing"])
    approval = make_approval(agent)

    with pytest.raises(DecisionRefused, match="catalog"):
        approve(approval, person=person)


def test_the_admin_group_and_superusers_decide(agent):
    approve(make_approval(agent), person=make_user("ada", groups=("admin",)))
    deny(
        make_approval(agent),
        person=make_user("root", superuser=True),
        reason="no",
    )
    statuses = sorted(Approval.objects.values_list("status", flat=True))
    assert statuses == ["approved", "denied"]


def test_the_event_rolls_back_with_the_decision(agent, approver):
    approval = make_approval(agent)

    with pytest.raises(RuntimeError), transaction.atomic():
        approve(approval, person=approver)
        raise RuntimeError("the caller's transaction fails")

    assert Approval.objects.get(pk=approval.pk).status == ApprovalStatus.PENDING
    assert approval_events() == []


def test_an_approver_limited_to_no_catalog_decides_nothing(agent):
    from identity.models import UserCatalogAccess

    person = make_user("nia", groups=("approver",))
    UserCatalogAccess.objects.create(user=person, catalogs=[])

    with pytest.raises(DecisionRefused, match="catalog"):
        approve(make_approval(agent), person=person)


@pytest.mark.django_db(transaction=True)
def test_two_people_deciding_at_once_get_one_decision_and_one_conflict():
    import threading

    from django.db import connection

    from tests.calls.approval_rows import restore_approver_groups

    restore_approver_groups()
    agent = make_user("api:bot")
    approval = make_approval(agent)
    people = [make_user(name, groups=("approver",)) for name in ("ann", "ben")]
    start = threading.Barrier(2)
    outcomes: list[str] = []

    def decide(person, verb):
        try:
            start.wait()
            verb(Approval.objects.get(pk=approval.pk), person=person, reason="r")
            outcomes.append("decided")
        except Conflict:
            outcomes.append("conflict")
        finally:
            connection.close()

    threads = [
        threading.Thread(target=decide, args=(people[0], approve)),
        threading.Thread(target=decide, args=(people[1], deny)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert sorted(outcomes) == ["conflict", "decided"]
    assert len(approval_events()) == 1
    status = Approval.objects.get(pk=approval.pk).status
    assert approval_events()[0].output["status"] == status


def test_a_decision_locks_the_approval_row_only(agent, approver):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    approval = make_approval(agent)

    with CaptureQueriesContext(connection) as queries:
        approve(approval, person=approver)

    locks = [q["sql"] for q in queries.captured_queries if "FOR UPDATE" in q["sql"]]
    assert len(locks) == 1
    assert locks[0].endswith('FOR UPDATE OF "calls_approval"')
