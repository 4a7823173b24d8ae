"""`create_person NAME --group G [--catalogs a,b]`: a person who can sign in, with a
one-time password alone on the last line of stdout; audited as the system."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command
from django.test import Client

from audit.models import AuditEvent
from catalog.services import create_catalog
from identity.models import UserCatalogAccess

pytestmark = pytest.mark.django_db

User = get_user_model()


@pytest.fixture(autouse=True)
def groups_and_catalogs(db: None) -> None:
    for name in ("admin", "curator", "compliance", "support"):
        Group.objects.get_or_create(name=name)
    create_catalog("other", "Other", "", actor=None)


def run(*args: str) -> str:
    out = StringIO()
    call_command("create_person", *args, stdout=out)
    return out.getvalue()


def test_it_prints_a_working_password_as_the_last_line_and_nothing_after():
    out = run("cora", "--group", "compliance")
    assert out.endswith("\n") and not out.endswith("\n\n")
    password = out.splitlines()[-1]
    assert " " not in password and len(password) >= 16
    assert Client().login(username="cora", password=password)
    cora = User.objects.get(username="cora")
    assert list(cora.groups.values_list("name", flat=True)) == ["compliance"]
    assert not UserCatalogAccess.objects.filter(user=cora).exists()  # all catalogs


def test_group_repeats_and_catalogs_limit():
    run("carl", "--group", "curator", "--group", "support", "--catalogs", "other")
    carl = User.objects.get(username="carl")
    assert sorted(carl.groups.values_list("name", flat=True)) == ["curator", "support"]
    assert carl.catalog_access.catalogs == ["other"]


def test_it_is_one_access_changed_event_by_the_system():
    run("ada", "--group", "admin", "--catalogs", "default,other")
    (event,) = AuditEvent.objects.filter(event_type="access_changed")
    assert event.actor_name == "system"
    assert event.input["via"] == "create_person"
    assert event.input["before"] is None
    assert event.output["after"]["groups"] == ["admin"]
    assert event.output["after"]["catalogs"] == ["default", "other"]


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--group", "wizards"], "groups: no group wizards"),
        (["--group", "curator", "--group", "elves"], "groups: no group elves"),
        (["--catalogs", "nowhere"], "catalogs: no catalog nowhere"),
        (["--catalogs", ","], "catalogs: name at least one catalog"),
    ],
)
def test_an_unknown_group_or_catalog_is_an_error_naming_it(args, named):
    with pytest.raises(CommandError, match=named):
        run("zed", *args)
    assert not User.objects.filter(username="zed").exists()
    assert not AuditEvent.objects.filter(event_type="access_changed").exists()


def test_a_taken_or_bad_username_is_an_error_naming_the_field():
    run("cora")
    with pytest.raises(CommandError, match="username: A user with that username"):
        run("cora")
    with pytest.raises(CommandError, match="username"):
        run("bad name!")
