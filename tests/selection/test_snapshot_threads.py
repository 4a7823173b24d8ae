"""Threaded web workers (config/gunicorn.py) ask for a catalog's snapshot from
several threads at once: one thread builds it and the others wait for that one,
so a large catalog is never built several times over in one process."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from django.db import connection

from catalog.services import ensure_default_catalog
from selection.adapters import snapshots
from tests.factories import make_tool

pytestmark = pytest.mark.django_db(transaction=True)


def test_threads_asking_at_once_build_one_snapshot(monkeypatch):
    catalog = ensure_default_catalog()
    make_tool(catalog, "get_weather", description="Weather for a city")
    catalog.refresh_from_db()
    snapshots.clear()
    built: list[int] = []
    real = snapshots._build

    def slow_build(*args: Any) -> Any:
        built.append(1)
        time.sleep(0.3)  # long enough for every thread to arrive meanwhile
        return real(*args)

    monkeypatch.setattr(snapshots, "_build", slow_build)
    start = threading.Barrier(4)
    got: list[Any] = []

    def ask() -> None:
        try:
            start.wait()
            got.append(snapshots.get_snapshot(catalog)[0])
        finally:
            connection.close()

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(built) == 1
    assert len(got) == 4 and all(snapshot is got[0] for snapshot in got)
    snapshots.clear()
