"""A benchmark's own database and audit state, chosen before Django starts.

Imports no Django: a bench script calls ``use_bench_database`` and only then
``django.setup()``, so the settings read the database and checkpoint file set here.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlparse, urlunparse

import psycopg


def use_bench_database(name: str, state: Path) -> None:
    """Create database ``name`` once (kept between runs), point DATABASE_URL at it,
    and keep the audit checkpoints in ``state``."""
    url = os.environ.get("DATABASE_URL", "postgresql://postgres@localhost/quiver")
    with psycopg.connect(url, autocommit=True) as conn:
        if not conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [name]
        ).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')
    parts = urlparse(url)
    os.environ["DATABASE_URL"] = urlunparse(parts._replace(path=f"/{name}"))
    state.mkdir(parents=True, exist_ok=True)
    os.environ["QUIVER_AUDIT_CHECKPOINT_FILE"] = str(state / "checkpoints.jsonl")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
