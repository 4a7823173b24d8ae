"""GET /healthz: the state of the database, pgvector, the broker and the workers."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse

from config.celery import app


def _database() -> dict[str, Any]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return {"ok": True}


def _pgvector() -> dict[str, Any]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
    if row is None:
        return {"ok": False, "error": "the vector extension is not installed"}
    return {"ok": True, "version": row[0]}


def _broker() -> dict[str, Any]:
    with app.connection_for_write(settings.CELERY_BROKER_URL) as conn:
        conn.ensure_connection(max_retries=1, timeout=2)
    return {"ok": True}


def _workers() -> dict[str, Any]:
    replies = app.control.ping(timeout=1.0) or []
    names = sorted(name for reply in replies for name in reply)
    if not names:
        return {"ok": False, "error": "no Celery worker answered a ping"}
    return {"ok": True, "workers": names}


CHECKS = {
    "database": _database,
    "pgvector": _pgvector,
    "broker": _broker,
    "worker": _workers,
}


def healthz(request: HttpRequest) -> JsonResponse:
    """200 when every part answers; 503 naming each part that is down."""
    results: dict[str, Any] = {}
    for name, check in CHECKS.items():
        if name == "worker" and not results.get("broker", {}).get("ok"):
            results[name] = {"ok": False, "error": "broker is down"}
            continue
        try:
            results[name] = check()
        except Exception as exc:  # every failure is reported, none is raised
            results[name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    down = [name for name, result in results.items() if not result["ok"]]
    body = {"status": "ok" if not down else "down", "down": down, "checks": results}
    return JsonResponse(body, status=200 if not down else 503)
