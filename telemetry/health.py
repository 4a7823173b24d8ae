"""GET /healthz: the state of the database, pgvector, the broker and the workers,
and whether the catalogs' tool embeddings are ready.

Anyone may ask and learns up or down per part; admins (a superuser, the admin
group, or an admin-scope bearer key) also get the details: versions, worker names,
error text. Those name hosts and sockets, so strangers never see them.

``?parts=`` names the parts to check (comma-separated), ``web`` among them: this web
process answers, checked without any other part. A container's probes ask for
``web`` alone: an outage of a part every process shares (the database, the broker)
must not restart every web process, nor take every one out of service, where each
still answers with a 503 naming the part."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.http import HttpRequest, JsonResponse
from rest_framework.exceptions import APIException
from rest_framework.request import Request

from audit.actors import Actor
from config.celery import app
from config.errors import json_reads
from identity.access import access_for
from identity.auth import ApiKeyAuthentication


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


def _web() -> dict[str, Any]:
    """This process took the request and answers it: nothing else is asked."""
    return {"ok": True}


CHECKS = {
    "database": _database,
    "pgvector": _pgvector,
    "broker": _broker,
    "worker": _workers,
}
# Asked for by name only (?parts=web); never part of the whole answer.
NAMED_ONLY = {"web": _web}


def _parts(raw: str | None) -> list[str] | str:
    """The parts ``?parts=`` names (every shared one when absent), or the rule it
    broke."""
    if raw is None:
        return list(CHECKS)
    names = [name.strip() for name in raw.split(",") if name.strip()]
    known = [*CHECKS, *NAMED_ONLY]
    unknown = [name for name in names if name not in known]
    if not names or unknown:
        return f"a comma-separated list of {', '.join(known)}"
    return list(dict.fromkeys(names))


@json_reads
def healthz(request: HttpRequest) -> JsonResponse:
    """200 when every part asked for answers; 503 naming each part that is down.
    The embeddings still pending never make it down (see ``_embeddings``)."""
    parts = _parts(request.GET.get("parts"))
    if isinstance(parts, str):
        return JsonResponse(
            {
                "error": "invalid",
                "detail": f"parts: {parts}",
                "fields": {"parts": [parts]},
            },
            status=400,
        )
    results = _run_checks(parts)
    down = [name for name, result in results.items() if not result["ok"]]
    admin = _is_admin(request)
    if not admin:
        results = {name: {"ok": result["ok"]} for name, result in results.items()}
    body = {"status": "ok" if not down else "down", "down": down, "checks": results}
    if request.GET.get("parts") is None and results["database"]["ok"]:
        body["embeddings"] = _embeddings(admin)
    return JsonResponse(body, status=200 if not down else 503)


# Each catalog's tools waiting for their vectors, lent by the catalog app at
# start-up (``register_embedding_backlog`` in CatalogConfig.ready): rows of
# ``catalog``, ``pending`` and ``words_only``.
Backlog = Callable[[], list[dict[str, Any]]]
_backlog: list[Backlog] = []


def register_embedding_backlog(backlog: Backlog) -> None:
    _backlog[:] = [backlog]


def embedding_backlog() -> list[dict[str, Any]]:
    if not _backlog:
        raise ImproperlyConfigured("telemetry: no embedding backlog registered")
    return _backlog[0]()


def _embeddings(admin: bool) -> dict[str, Any]:
    """Whether every catalog's tools have their vectors (``ready``); admins also
    get each catalog's ``pending`` count and whether its selections are ranked
    by words alone until then (``words_only``). A stack that is still embedding
    is up: selections answer, by words alone, and say so."""
    try:
        catalogs = embedding_backlog()
    except Exception as exc:  # reported, never raised (like every check)
        error = {"error": f"{type(exc).__name__}: {exc}"} if admin else {}
        return {"ready": False, **error}
    ready = not any(row["pending"] or row["words_only"] for row in catalogs)
    if not admin:
        return {"ready": ready}
    pending = sum(row["pending"] for row in catalogs)
    return {"ready": ready, "pending": pending, "catalogs": catalogs}


def _is_admin(request: HttpRequest) -> bool:
    try:
        return _admin_caller(request)
    except Exception:  # the database may be the part that is down
        return False


def _admin_caller(request: HttpRequest) -> bool:
    user: Actor = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return access_for(user).is_admin
    try:
        found = ApiKeyAuthentication().authenticate(Request(request))
    except APIException:
        return False  # a bad key is no one: the public answer
    return found is not None and access_for(found[0]).is_admin


def _run_checks(parts: list[str]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    checks = {**CHECKS, **NAMED_ONLY}
    for name in parts:
        check = checks[name]
        if name == "worker" and not results.get("broker", {}).get("ok", True):
            results[name] = {"ok": False, "error": "broker is down"}
            continue
        try:
            results[name] = check()
        except Exception as exc:  # every failure is reported, none is raised
            results[name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    return results
