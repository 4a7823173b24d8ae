"""GET /healthz: the state of the database, pgvector, the broker and the workers.

Anyone may ask and learns up or down per part; admins (a superuser, the admin
group, or an admin-scope bearer key) also get the details: versions, worker names,
error text. Those name hosts and sockets, so strangers never see them."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_safe
from rest_framework.exceptions import APIException
from rest_framework.request import Request

from catalog.access import access_for
from catalog.auth import ApiKeyAuthentication
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
    """Some worker answers, and every queue tasks are routed to has a consumer
    (a queue nobody takes, e.g. ``learning`` with no learning worker, is down)."""
    replies = app.control.inspect(timeout=1.0).active_queues() or {}
    names = sorted(replies)
    if not names:
        return {"ok": False, "error": "no Celery worker answered a ping"}
    taken = {queue["name"] for queues in replies.values() for queue in queues or []}
    missing = sorted(routed_queues() - taken)
    if missing:
        error = f"no worker consumes the queue(s) {', '.join(missing)}"
        return {"ok": False, "workers": names, "error": error}
    return {"ok": True, "workers": names}


def routed_queues() -> set[str]:
    """The default queue and every queue a task is routed to (settings)."""
    routes = getattr(settings, "CELERY_TASK_ROUTES", {}) or {}
    named = {str(route["queue"]) for route in routes.values() if "queue" in route}
    return {str(settings.CELERY_TASK_DEFAULT_QUEUE), *named}


CHECKS = {
    "database": _database,
    "pgvector": _pgvector,
    "broker": _broker,
    "worker": _workers,
}


@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """200 when every part answers; 503 naming each part that is down."""
    results = _run_checks()
    down = [name for name, result in results.items() if not result["ok"]]
    if not _is_admin(request):
        results = {name: {"ok": result["ok"]} for name, result in results.items()}
    body = {"status": "ok" if not down else "down", "down": down, "checks": results}
    return JsonResponse(body, status=200 if not down else 503)


def _is_admin(request: HttpRequest) -> bool:
    try:
        return _admin_caller(request)
    except Exception:  # the database may be the part that is down
        return False


def _admin_caller(request: HttpRequest) -> bool:
    user: Any = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return access_for(user).is_admin
    try:
        found = ApiKeyAuthentication().authenticate(Request(request))
    except APIException:
        return False  # a bad key is no one: the public answer
    return found is not None and access_for(found[0]).is_admin


def _run_checks() -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name, check in CHECKS.items():
        if name == "worker" and not results.get("broker", {}).get("ok"):
            results[name] = {"ok": False, "error": "broker is down"}
            continue
        try:
            results[name] = check()
        except Exception as exc:  # every failure is reported, none is raised
            results[name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    return results
