"""The email to an approval's approvers (Django's locmem backend): one message
per approval, however often its task runs, to the people who may decide it and
to nobody else: not the requester, not the maker of the key that asked, not an
approver of another catalog, not a curator."""

from __future__ import annotations

import pytest
from django.core import mail

from catalog.models import Catalog
from identity.models import UserCatalogAccess
from identity.services import create_api_client
from notify import mail as approval_mail
from notify.models import ApprovalEmail
from tests.factories import make_user
from tests.notify.conftest import CARD, CARD_PART, ask_approval

pytestmark = pytest.mark.django_db


@pytest.fixture
def people(approver_groups):
    """ann and bob approve everywhere; fin approves finance only; cam curates;
    nomail approves but has no address; root is a superuser."""
    found = {
        name: make_user(name, groups=groups)
        for name, groups in (
            ("ann", ("approver",)),
            ("bob", ("approver",)),
            ("fin", ("approver",)),
            ("cam", ("curator",)),
            ("nomail", ("approver",)),
        )
    }
    found["nomail"].email = ""
    found["nomail"].save(update_fields=["email"])
    Catalog.objects.create(slug="finance", name="Finance")
    UserCatalogAccess.objects.create(user=found["fin"], catalogs=["finance"])
    found["root"] = make_user("root", superuser=True)
    return found


def test_one_message_goes_to_the_approvers_whatever_runs_it_twice(people, agent):
    approval = ask_approval(agent, arguments={"path": "/srv/q3.pdf"})
    assert ApprovalEmail.objects.get(approval_id=approval.pk).status == "pending"

    assert approval_mail.email_approvers(approval.pk) == "sent"
    assert approval_mail.email_approvers(approval.pk) == "sent"
    assert approval_mail.email_approvers(str(approval.pk)) == "sent"

    [message] = mail.outbox
    assert sorted(message.to) == [
        "ann@example.com",
        "bob@example.com",
        "root@example.com",
    ]
    assert "files.delete_file" in message.subject
    assert agent.get_username() in message.subject
    assert '"path": "/srv/q3.pdf"' in message.body
    assert str(approval.pk) in message.body
    row = ApprovalEmail.objects.get(approval_id=approval.pk)
    assert (row.status, row.recipients, row.attempts) == ("sent", 3, 1)


def test_the_person_who_asked_is_not_told(people):
    approval = ask_approval(people["ann"])
    approval_mail.email_approvers(approval.pk)
    [message] = mail.outbox
    assert "ann@example.com" not in message.to
    assert sorted(message.to) == ["bob@example.com", "root@example.com"]


def test_the_maker_of_the_key_that_asked_is_not_told(people):
    client, _key = create_api_client(
        "bob-bot", "agent", catalogs="*", actor=people["bob"]
    )
    child, _key = create_api_client(
        "bob-bot-child", "agent", catalogs="*", actor=client.user
    )
    for requester in (client.user, child.user):
        approval = ask_approval(requester, arguments={"for": requester.username})
        approval_mail.email_approvers(approval.pk)
    for message in mail.outbox:
        assert sorted(message.to) == ["ann@example.com", "root@example.com"]
    assert len(mail.outbox) == 2


def test_an_approver_of_another_catalog_hears_only_of_it(people, agent):
    from tests.factories import make_tool

    ledger = make_tool(
        Catalog.objects.get(slug="finance"), "ledger.close", requires_approval=True
    )
    approval = ask_approval(agent, tool=ledger)
    approval_mail.email_approvers(approval.pk)
    [message] = mail.outbox
    assert "fin@example.com" in message.to


def test_only_the_hash_is_mailed_under_hash_only(people, agent, settings):
    settings.QUIVER_CALL_ARGUMENTS_HASH_ONLY = True
    approval = ask_approval(agent, arguments={"card": CARD})
    approval_mail.email_approvers(approval.pk)
    [message] = mail.outbox
    assert CARD_PART not in message.body and approval.arguments_hash in message.body


def test_no_email_once_the_approval_no_longer_waits(people, agent):
    from calls.decisions import deny

    approval = ask_approval(agent)
    deny(approval, person=people["ann"], reason="no")
    assert approval_mail.email_approvers(approval.pk) == "nobody"
    assert mail.outbox == []


def test_emails_can_be_turned_off(people, agent, settings):
    settings.QUIVER_APPROVAL_EMAILS = False
    approval = ask_approval(agent)
    assert not ApprovalEmail.objects.filter(approval_id=approval.pk).exists()


def test_a_backend_that_fails_is_tried_again_then_given_up(people, agent, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", 9, 1
    approval = ask_approval(agent)
    statuses = [approval_mail.email_approvers(approval.pk) for _ in range(6)]
    assert statuses == ["pending"] * 4 + ["failed", "failed"]
    row = ApprovalEmail.objects.get(approval_id=approval.pk)
    assert row.attempts == 5 and "not sent" in row.last_error
