"""The Verify page shows the last check's result, when it ran and who ran it."""

from __future__ import annotations

import pytest
from django.utils import timezone

from audit.checkpoint_store import FileStore
from audit.verify import ChainCheck
from compliance import last_verify

pytestmark = pytest.mark.django_db


def test_before_any_check_the_page_shows_no_last_result(as_compliance):
    page = as_compliance.get("/audit/verify/").content.decode()
    assert 'data-testid="verify-last"' not in page


def test_a_check_is_shown_as_the_last_result_with_when_and_who(as_compliance):
    ran = as_compliance.post("/audit/verify/").content.decode()
    assert 'data-testid="verify-ok"' in ran
    page = as_compliance.get("/audit/verify/").content.decode()
    last = page.split('data-testid="verify-last"')[1].split("</p>")[0]
    assert "the chain was intact" in last
    assert "by cora" in last
    assert timezone.now().strftime("%Y-%m-%d") in last


def test_a_damaged_result_is_remembered_as_damaged(as_compliance):
    bad = ChainCheck(ok=False, checked=7, first_bad_id=3, problem="x", kind="link")
    last_verify.remember(bad, by="someone")
    page = as_compliance.get("/audit/verify/").content.decode()
    assert "the chain was damaged (link)" in page
    assert "by someone" in page


def test_a_stopped_check_is_remembered_as_stopped(as_compliance):
    last_verify.remember(None, by="someone", stopped="too slow")
    page = as_compliance.get("/audit/verify/").content.decode()
    assert "stopped before it finished" in page


def test_an_unreadable_last_result_is_ignored(as_compliance, settings):
    FileStore(settings.QUIVER_AUDIT_CHECKPOINT_FILE).note_path(
        last_verify.NOTE
    ).write_text("{not json")
    assert last_verify.last_check() is None
    assert as_compliance.get("/audit/verify/").status_code == 200
