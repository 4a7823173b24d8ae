"""Fixtures shared by the learning tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def sent(monkeypatch):
    """The tasks sent by name (jobs.services.send), in order, instead of
    going to the broker."""
    names: list[tuple[str, tuple]] = []
    monkeypatch.setattr(
        "jobs.services.send",
        lambda name, *args, priority=None: names.append((name, args)) or True,
    )
    return names
