"""Connected apps in the console: each person sees and revokes their own
connections, admins see and revoke everyone's; nobody else's is reachable."""

from __future__ import annotations

import pytest
from django.test import Client

from audit.models import AuditEvent
from oauth.models import Connection
from tests.factories import make_user
from tests.oauth_flow import connect, make_oauth_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def connections():
    alice = make_user("alice", groups=("support",))
    bob = make_user("bob", groups=("support",))
    return (
        connect(alice, client=make_oauth_client("Alice's IDE"), roles=("support",)),
        connect(bob, client=make_oauth_client("Bob's connector"), roles=()),
    )


def signed_in(user):
    browser = Client()
    browser.force_login(user)
    return browser


def test_a_person_sees_only_their_own_connections(connections):
    alices, _bobs = connections
    page = signed_in(alices.person).get("/connections/").content.decode()
    assert "Alice&#x27;s IDE" in page
    assert "Bob&#x27;s connector" not in page


def test_an_admin_sees_everyones(connections):
    page = signed_in(make_user("root", superuser=True)).get("/connections/")
    text = page.content.decode()
    assert "Alice&#x27;s IDE" in text and "Bob&#x27;s connector" in text


def test_a_person_revokes_their_own_and_never_anothers(connections):
    alices, bobs = connections
    browser = signed_in(alices.person)
    other = browser.post(f"/connections/{bobs.public_id}/revoke")
    assert other.status_code == 404
    mine = browser.post(f"/connections/{alices.public_id}/revoke")
    assert mine.status_code == 302
    assert Connection.objects.get(pk=alices.pk).revoked is not None
    assert Connection.objects.get(pk=bobs.pk).revoked is None
    assert alices.principal.__class__.objects.get(pk=alices.principal_id).revoked
    row = AuditEvent.objects.get(event_type="oauth_revoked")
    assert row.actor_name == "alice"


def test_an_admin_revokes_anyones(connections):
    _alices, bobs = connections
    browser = signed_in(make_user("root", superuser=True))
    assert browser.post(f"/connections/{bobs.public_id}/revoke").status_code == 302
    assert Connection.objects.get(pk=bobs.pk).revoked is not None


def test_the_page_has_an_empty_state(db):
    page = signed_in(make_user("eve")).get("/connections/").content.decode()
    assert "No connected apps yet" in page
