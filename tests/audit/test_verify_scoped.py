"""A compliance reader limited to some catalogs runs the chain check and learns
nothing of the records they cannot read: their answer (API, console, the last
check the page shows) is the same whatever happens in other catalogs, counts
and names only their own records, and says "elsewhere" for damage it cannot
show them. A reader of every catalog still gets the whole answer."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest
from django.db import connection

from audit.models import AuditEvent
from audit.services import record_event, seal_pending
from audit.verify_scope import PROBLEM_ELSEWHERE
from catalog.models import Catalog
from catalog.services import ensure_default_catalog
from identity.models import UserCatalogAccess
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def record(catalog: str, n: int) -> list[AuditEvent]:
    return [
        record_event(
            "selection",
            actor=None,
            request_id=uuid.uuid4(),
            catalog_slug=catalog,
            summary=f"{catalog} {i}",
            input={"query": f"{catalog} {i}"},
            output={},
        )
        for i in range(n)
    ]


@pytest.fixture
def chain(db) -> dict[str, list[AuditEvent]]:
    ensure_default_catalog()
    Catalog.objects.create(slug="finance", name="Finance")
    return {"finance": record("finance", 12), "default": record("default", 3)}


@pytest.fixture
def limited(client) -> Any:
    """A compliance person who reads the default catalog only."""
    carol = make_user("carol", groups=("compliance",))
    UserCatalogAccess.objects.create(user=carol, catalogs=["default"])
    client.force_login(carol)
    return client


def verified(api: Any) -> dict[str, Any]:
    response = api.get("/api/v1/audit/verify")
    assert response.status_code == 200, response.content
    return response.json()


def as_owner(sql: str, params: list[Any]) -> None:
    seal_pending()
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE audit_auditevent DISABLE TRIGGER USER")
        cursor.execute(sql, params)
        cursor.execute("ALTER TABLE audit_auditevent ENABLE TRIGGER USER")


def result_section(page: Any) -> str:
    [section] = re.findall(r"<section.*?</section>", page.content.decode(), re.S)
    return section


def test_a_limited_key_reads_the_same_answer_whatever_other_catalogs_hold(
    chain, with_key
):
    api = with_key("compliance", name="auditor", catalogs=["default"])
    before = verified(api)
    record("finance", 37)
    after = verified(api)

    assert before == after
    assert after["ok"] is True and after["scope"] == ["default"]
    assert after["checked"] == 3
    assert after["head_id"] == chain["default"][-1].pk
    for withheld in ("head_seq", "first_bad_seq", "checkpoint_seq", "seconds"):
        assert after[withheld] is None
    assert after["sinks"] == {}


def test_a_reader_of_every_catalog_still_gets_the_whole_chain(chain, with_key):
    api = with_key("compliance", name="auditor")
    whole = verified(api)
    assert whole["scope"] is None
    assert whole["checked"] == AuditEvent.objects.count()
    assert whole["head_seq"] == whole["checked"]


@pytest.mark.parametrize(
    "damage",
    [
        "UPDATE audit_auditevent SET summary = 'edited' WHERE id = %s",
        "DELETE FROM audit_auditevent WHERE id = %s",
    ],
    ids=["edited", "deleted"],
)
def test_damage_in_a_record_it_cannot_read_is_elsewhere_and_nothing_more(
    chain, with_key, damage
):
    api = with_key("compliance", name="auditor", catalogs=["default"])
    as_owner(damage, [chain["finance"][4].pk])
    body = verified(api)
    assert (body["ok"], body["kind"], body["first_bad_id"]) == (
        False,
        "elsewhere",
        None,
    )
    assert body["problem"] == PROBLEM_ELSEWHERE
    assert body["checked"] == 0  # its three records come after the damage


def test_damage_in_its_own_record_is_named_without_a_count(chain, with_key):
    api = with_key("compliance", name="auditor", catalogs=["default"])
    mine = chain["default"][1]
    as_owner("UPDATE audit_auditevent SET summary = 'x' WHERE id = %s", [mine.pk])
    body = verified(api)
    assert (body["ok"], body["kind"], body["first_bad_id"]) == (
        False,
        "content_edited",
        mine.pk,
    )
    assert body["checked"] == 1
    assert not re.search(r"\d", body["problem"])


def test_the_console_shows_a_limited_reader_only_its_records(chain, limited):
    before = result_section(limited.post("/audit/verify/"))
    record("finance", 37)
    after = result_section(limited.post("/audit/verify/"))
    assert before == after
    assert "3 records of default checked" in after
    assert str(AuditEvent.objects.count()) not in after


def test_the_last_check_an_admin_ran_tells_a_limited_reader_only_its_outcome(
    chain, limited, admin_client
):
    admin_client.post("/audit/verify/")
    page = limited.get("/audit/verify/").content.decode()
    [last] = re.findall(r'data-testid="verify-last">(.*?)</p>', page, re.S)
    assert "the chain was intact" in last
    assert "checked" not in last and "admin" not in last
