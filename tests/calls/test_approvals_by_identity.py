"""Whose request an approval is, by identity (ids), never by name: a person renamed
by a superuser still never decides a request of their own or of a key they made;
a new person given an old name is not treated as the one who had it; a request
whose requester is gone is nobody's to decide (identity.access.is_own_request)."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from calls.approvals import ApprovalRefused, use_approval
from calls.decisions import DecisionRefused, approve, deny
from calls.models import Approval, ApprovalStatus
from identity.access import own_requesters
from identity.services import create_api_client
from tests.calls.approval_rows import make_approval
from tests.factories import make_user

pytestmark = pytest.mark.django_db
URL = "/approvals/"


@pytest.fixture
def ann() -> Any:
    return make_user("ann", groups=("approver",))


def rename(person: Any, name: str) -> Any:
    """As a superuser renames someone (the admin's form ends in this save)."""
    person.username = name
    person.save(update_fields=["username"])
    return person


def key_user(name: str, maker: Any) -> Any:
    client, _key = create_api_client(name, "agent", catalogs="*", actor=maker)
    return client.user


def decide_url(approval: Approval) -> str:
    return f"/approvals/{approval.pk}/approve/"


def test_a_renamed_person_still_cannot_approve_a_request_of_their_own_key(ann):
    approval = make_approval(key_user("ann-bot", ann))
    rename(ann, "anna")

    for decide in (approve, deny):
        with pytest.raises(DecisionRefused, match="requested_by: .* of their own"):
            decide(approval, person=ann, reason="mine")

    assert Approval.objects.get(pk=approval.pk).status == ApprovalStatus.PENDING


def test_nor_one_of_a_key_made_by_their_key_after_the_rename(ann):
    first, _ = create_api_client("ann-key", "agent", catalogs="*", actor=ann)
    child, _ = create_api_client("ann-child", "agent", catalogs="*", actor=first.user)
    approval = make_approval(child.user)
    rename(ann, "someone-else")

    with pytest.raises(DecisionRefused, match="requested_by"):
        approve(approval, person=ann)


def test_nor_a_request_they_made_themselves_under_their_old_name(ann):
    approval = make_approval(ann)
    rename(ann, "anna")

    with pytest.raises(DecisionRefused, match="requested_by"):
        approve(approval, person=ann)


def test_the_renamed_persons_page_shows_no_buttons_and_refuses_the_post(client, ann):
    approval = make_approval(key_user("ann-bot", ann))
    rename(ann, "anna")
    client.force_login(ann)

    page = client.get(URL).content.decode()
    answer = client.post(decide_url(approval), {})

    assert "Your own request" in page
    assert f'id="decide-{approval.pk}"' not in page
    assert answer.status_code == 403
    assert Approval.objects.get(pk=approval.pk).status == ApprovalStatus.PENDING


def test_a_new_person_given_an_old_name_is_not_treated_as_its_first_holder(client, ann):
    approval = make_approval(key_user("ann-bot", ann))
    rename(ann, "anna")
    newcomer = make_user("ann", groups=("approver",))
    client.force_login(newcomer)

    page = client.get(URL).content.decode()
    assert f'id="decide-{approval.pk}"' in page
    assert "Your own request" not in page
    assert own_requesters(newcomer) == {newcomer.pk}

    answer = client.post(decide_url(approval), {})
    assert answer.status_code in (200, 302)
    decided = Approval.objects.get(pk=approval.pk)
    assert decided.status == ApprovalStatus.APPROVED
    assert decided.decided_by_id == newcomer.pk


def test_a_new_person_given_the_name_of_a_deleted_maker_decides_its_keys_requests(
    ann,
):
    approval = make_approval(key_user("ann-bot", ann))
    ann.delete()
    newcomer = make_user("ann", groups=("approver",))

    decided = approve(approval, person=newcomer)

    assert decided.status == ApprovalStatus.APPROVED


def test_a_request_whose_requester_is_gone_is_decided_by_nobody(client, ann):
    agent = key_user("files-bot", None)
    approval = make_approval(agent)
    agent.delete()  # the key's service user, so the key with it
    approval.refresh_from_db()
    assert approval.requested_by_id is None
    stranger = make_user("zed", groups=("approver",))

    for person in (ann, stranger, make_user("files-bot", groups=("approver",))):
        with pytest.raises(DecisionRefused, match="requested_by: the requester was"):
            deny(approval, person=person, reason="who?")
    client.force_login(stranger)
    page = client.get(URL).content.decode()
    assert "Its requester was deleted" in page
    assert f'id="decide-{approval.pk}"' not in page


def test_an_approval_whose_requester_is_gone_is_used_by_no_caller():
    approval = make_approval(key_user("files-bot", None))
    Approval.objects.filter(pk=approval.pk).update(
        requested_by=None, status=ApprovalStatus.APPROVED, decided=timezone.now()
    )
    tool = approval.tool
    assert tool is not None

    with pytest.raises(ApprovalRefused, match="approval_id: no approval"):
        use_approval(approval.pk, tool=tool, arguments=approval.arguments, caller=None)

    assert Approval.objects.get(pk=approval.pk).status == ApprovalStatus.APPROVED
