"""The ``approver`` group (calls/migrations/0002): it and the admin group hold the
approval permission; ``create_person --group approver`` makes an approver."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command

from identity.access import access_for
from identity.services.people import group_choices

pytestmark = pytest.mark.django_db


def holds_permission(group: str) -> bool:
    return (
        Group.objects.get(name=group)
        .permissions.filter(content_type__app_label="calls", codename="decide_approval")
        .exists()
    )


def test_a_fresh_install_has_the_approver_group_with_the_permission():
    assert holds_permission("approver")
    assert holds_permission("admin")
    assert not holds_permission("curator")
    assert not holds_permission("compliance")


def test_create_person_makes_an_approver_who_may_decide():
    out = StringIO()
    call_command("create_person", "ann", "--group", "approver", stdout=out)

    person = get_user_model().objects.get(username="ann")
    assert "groups: approver" in out.getvalue()
    access = access_for(person)
    assert access.decides_approvals
    assert not access.can_write and not access.can_audit


def test_the_people_page_offers_the_approver_group():
    assert "approver" in group_choices()[:4]
