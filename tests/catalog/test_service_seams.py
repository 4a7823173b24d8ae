"""Catalog services enqueue work by task name: none of them imports the tasks."""

from __future__ import annotations

import ast
from pathlib import Path

SERVICES = Path(__file__).resolve().parents[2] / "catalog" / "services"


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_no_catalog_service_imports_the_tasks_module():
    offenders = {
        path.name
        for path in SERVICES.glob("*.py")
        if any(name.startswith("catalog.tasks") for name in imported_modules(path))
    }
    assert offenders == set()


def test_every_job_kind_has_a_task_the_worker_knows():
    from catalog.services.work import EMBED_TOOL
    from config.celery import app
    from jobs.choices import JobKind
    from jobs.services import JOB_TASKS, SWEEP

    app.loader.import_default_modules()
    assert set(JOB_TASKS) == set(JobKind)
    for name in [*JOB_TASKS.values(), EMBED_TOOL, SWEEP]:
        assert name in app.tasks
