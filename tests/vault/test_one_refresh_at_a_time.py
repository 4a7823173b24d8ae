"""One refresh in flight per token: calls that find the same token about to
expire at once wait on the connection's row lock, and all but the first find it
refreshed. Without the lock the server (which rotates refresh tokens) would see
the same refresh token twice and refuse the second, and the connection would be
lost. Threads with database connections of their own, so the test commits."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection as db_connection
from django.utils import timezone

from tests.vault.conftest import connection_of
from vault.models import Connection
from vault.services.tokens import credential_for

pytestmark = pytest.mark.django_db(transaction=True)
CALLS = 4


def test_calls_that_find_a_token_expiring_share_one_refresh(
    notes, alice, connect, oauth_upstream
):
    connect(alice, notes, "alice-up")
    (first,) = oauth_upstream.authority.tokens_of("alice-up")
    Connection.objects.filter(person=alice).update(
        expires=timezone.now() - timedelta(seconds=1)
    )
    found: list[Any] = []
    failed: list[BaseException] = []
    start = threading.Barrier(CALLS)

    def call() -> None:
        try:
            start.wait()
            credential = credential_for(alice, notes)
            assert credential is not None
            found.append(credential.headers["Authorization"])
        except BaseException as exc:  # reported below, in the test's thread
            failed.append(exc)
        finally:
            db_connection.close()

    threads = [threading.Thread(target=call) for _ in range(CALLS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert failed == []
    assert len(found) == CALLS and len(set(found)) == 1
    assert oauth_upstream.authority.refresh_requests == 1
    (token,) = set(oauth_upstream.authority.tokens_of("alice-up")) - {first}
    assert found[0] == f"Bearer {token}"
    assert connection_of(alice, notes).refreshed is not None
