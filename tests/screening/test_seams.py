"""Screening is pure: no Django, none of Quiver's apps (every layer uses it)."""

from __future__ import annotations

from pathlib import Path

from tests.catalog.test_service_seams import imported_modules

PACKAGE = Path(__file__).resolve().parents[2] / "screening"
APPS = ("django", "catalog", "selection", "sources", "calls", "gateway", "audit")


def test_screening_imports_no_django_and_no_app():
    offenders = {
        f"{path.name} imports {name}"
        for path in PACKAGE.glob("*.py")
        for name in imported_modules(path)
        if name.split(".")[0] in APPS or name.startswith("config")
    }
    assert offenders == set()
