"""Writes to sources: add, edit, delete (admins only), and starting a sync.

Each write is one ``source_changed`` audit event in its transaction. The event
names the headers a source sends, never their values (``sources.secrets``).
Adding a source queues its first sync in the same transaction (the job is sent
to the workers on commit), so its tools appear without a second step.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction

from audit.actors import Actor, stored_user
from audit.choices import EventType
from catalog import owned
from catalog.choices import ToolStatus
from catalog.models import Catalog
from catalog.services.tools import set_tool_status
from jobs import services as jobs
from jobs.choices import JobKind, JobState
from jobs.models import Job
from sources.models import Source, SourceKind, SourceStatus
from sources.netguard import url_problem
from sources.secrets import (
    MASK,
    HeadersUnreadable,
    decrypt_headers,
    encrypt_headers,
    origin,
)
from sources.stdio import StdioConfigError, stdio_spec

# Letters, digits and hyphens: a source's name is its tools' namespace
# ("<source>__<tool>"), so it may hold no "_" and two sources never overlap.
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,31}$")
NAME_RULE = (
    "name: 1 to 32 lower-case letters, digits and hyphens, starting with a letter "
    "or digit (it prefixes its tools' names: <name>__<tool>)"
)
HEADER_NAME_RE = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$")
# Set by the HTTP client or the MCP transport itself; a source may not override them.
RESERVED_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "content-type",
        "transfer-encoding",
        "connection",
        "upgrade",
        "te",
        "trailer",
        "keep-alive",
        "accept",
        "mcp-session-id",
        "mcp-protocol-version",
    }
)
MAX_HEADERS = 20
MAX_HEADER_VALUE = 8192
STDIO_RULE = (
    "kind: only 'mcp' (a streamable HTTP url) may be added over the API or the "
    "console; a stdio command is configured in the server's settings file only"
)
STDIO_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
STDIO_NAME_RULE = (
    "stdio_name: 1 to 64 letters, digits, '_', '.' and '-', starting with a "
    "letter or digit"
)
STDIO_FIXED = (
    "{field}: a stdio source has none; its command, arguments and environment "
    "are in the server's settings file (QUIVER_SOURCES_FILE)"
)


def require_manager(actor: Actor, catalog: Catalog) -> None:
    """Admins only (``catalog.owned``'s rule); the caller has already made sure
    the catalog is visible (404 otherwise)."""
    owned.require_manager(Source, actor, catalog)


def clean_headers(
    headers: Any, previous: dict[str, str] | None = None
) -> dict[str, str]:
    """Checked headers; a value equal to the mask keeps the stored one (so a form
    or a PATCH showing the masked headers back changes nothing)."""
    if headers is None:
        return {}
    if not isinstance(headers, dict):
        raise ValidationError({"headers": ["headers: must be an object of strings"]})
    if len(headers) > MAX_HEADERS:
        raise ValidationError({"headers": [f"headers: at most {MAX_HEADERS}"]})
    cleaned: dict[str, str] = {}
    for name, value in headers.items():
        problem = _header_problem(name, value)
        if problem:
            raise ValidationError({"headers": [problem]})
        if value == MASK:
            if previous is None or name not in previous:
                raise ValidationError(
                    {
                        "headers": [
                            f"headers: {name}: the masked value has no stored value"
                        ]
                    }
                )
            value = previous[name]
        cleaned[name] = value
    return cleaned


def _header_problem(name: Any, value: Any) -> str:
    if not isinstance(name, str) or not HEADER_NAME_RE.fullmatch(name):
        return f"headers: {str(name)[:100]!r} is not a valid header name"
    if name.lower() in RESERVED_HEADERS:
        return f"headers: {name} is set by Quiver itself and may not be given"
    if not isinstance(value, str) or not value:
        return f"headers: {name}: the value must be a non-empty string"
    if len(value) > MAX_HEADER_VALUE or any(c in value for c in "\r\n\0"):
        return (
            f"headers: {name}: the value must be at most {MAX_HEADER_VALUE} "
            "characters, on one line"
        )
    return ""


def _check(source: Source) -> None:
    errors: dict[str, list[str]] = {}
    if source.kind == SourceKind.STDIO:
        # No network target: the deny-list does not apply; the command is the
        # settings file's (checked when the source is added and at every use).
        if source.url:
            errors["url"] = [STDIO_FIXED.format(field="url")]
        if not STDIO_NAME_RE.fullmatch(source.stdio_name or ""):
            errors["stdio_name"] = [STDIO_NAME_RULE]
    elif source.kind != SourceKind.MCP:
        errors["kind"] = [STDIO_RULE]
    else:
        problem = url_problem(source.url)
        if problem:
            errors["url"] = [problem]
    if not NAME_RE.fullmatch(source.name or ""):
        errors["name"] = [NAME_RULE]
    problem = timeout_problem(source.timeout_seconds)
    if problem:
        errors["timeout_seconds"] = [problem]
    if not 1 <= int(source.max_result_bytes) <= 10_000_000:
        errors["max_result_bytes"] = ["max_result_bytes: between 1 and 10000000"]
    if errors:
        raise ValidationError(errors)


def timeout_problem(timeout: Any) -> str:
    """The rule a source's ``timeout_seconds`` breaks, or "": a call waits on the
    upstream inside a web request, so never as long as the web server's timeout
    (settings: ``QUIVER_CALL_TIMEOUT_MAX_SECONDS``)."""
    most = settings.QUIVER_CALL_TIMEOUT_MAX_SECONDS
    if 1 <= float(timeout) <= most:
        return ""
    return (
        f"timeout_seconds: between 1 and {most} seconds (a call must end within "
        f"the web server's {settings.QUIVER_WEB.timeout_s} s limit; "
        "QUIVER_CALL_TIMEOUT_MAX_SECONDS)"
    )


def _event(
    source: Source,
    action: str,
    actor: Actor,
    request_id: uuid.UUID | None,
    headers: dict[str, str],
    changed: list[str] | None = None,
    dropped: list[str] | None = None,
) -> None:
    where: dict[str, Any] = {"url": source.url}
    if source.kind == SourceKind.STDIO:
        # The entry's name and its command's basename: never its env or arguments.
        where = {"stdio_name": source.stdio_name, "command": _command_name(source)}
    summary = f"source {source.name!r}: {action}"
    details: dict[str, Any] = {
        "kind": source.kind,
        **where,
        "header_names": sorted(headers),
        "changed": changed or [],
    }
    if dropped:
        # Names only: the values never leave sources.secrets.
        details["headers_dropped"] = dropped
        summary += f" (the url's origin changed: headers {', '.join(dropped)} dropped)"
    owned.record_change(
        source,
        EventType.SOURCE_CHANGED,
        action,
        actor=actor,
        request_id=request_id,
        details=details,
        summary=summary,
    )


@dataclass(frozen=True)
class SourceAdded:
    """A new source and the job of its first sync (queued, sent on commit), for
    the caller to name so the person can follow it."""

    source: Source
    sync_job: Job


def create_source(
    catalog: Catalog,
    *,
    name: str,
    url: str,
    headers: Any = None,
    kind: str = SourceKind.MCP,
    timeout_seconds: float = 30.0,
    max_result_bytes: int = 100_000,
    actor: Actor,
    request_id: uuid.UUID | None = None,
) -> SourceAdded:
    """A new source of ``catalog``, its first sync queued: a streamable HTTP
    one only (``add_stdio_source`` is the settings file's way)."""
    require_manager(actor, catalog)
    if kind != SourceKind.MCP:
        raise ValidationError({"kind": [STDIO_RULE]})
    clean = clean_headers(headers)
    source = Source(
        catalog=catalog,
        name=name,
        kind=kind,
        url=url,
        timeout_seconds=timeout_seconds,
        max_result_bytes=max_result_bytes,
        headers_encrypted=encrypt_headers(clean, url),
        created_by=stored_user(actor),
    )
    _check(source)
    return _save_new(source, actor, request_id, clean)


def _command_name(source: Source) -> str:
    try:
        return stdio_spec(source.stdio_name).describe()["command"]
    except StdioConfigError:
        return "(not configured)"


def add_stdio_source(
    catalog: Catalog,
    *,
    name: str,
    stdio_name: str,
    timeout_seconds: float = 30.0,
    max_result_bytes: int = 100_000,
    actor: Actor = None,
    request_id: uuid.UUID | None = None,
) -> SourceAdded:
    """A new stdio source of ``catalog``, its first sync queued: the command of
    entry ``stdio_name`` of the server's settings file (``sources.stdio``), which
    must be there and well formed. Only the ``add_stdio_source`` management
    command calls this (as the system: whoever runs it holds the server's files);
    no view or API does."""
    if actor is not None:
        require_manager(actor, catalog)
    try:
        stdio_spec(stdio_name)
    except StdioConfigError as exc:
        raise ValidationError({"stdio_name": [str(exc)]}) from None
    source = Source(
        catalog=catalog,
        name=name,
        kind=SourceKind.STDIO,
        url="",
        stdio_name=stdio_name,
        timeout_seconds=timeout_seconds,
        max_result_bytes=max_result_bytes,
        headers_encrypted=encrypt_headers({}),
        created_by=stored_user(actor),
    )
    _check(source)
    return _save_new(source, actor, request_id, {})


def _save_new(
    source: Source, actor: Actor, request_id: uuid.UUID | None, headers: dict[str, str]
) -> SourceAdded:
    with transaction.atomic():
        owned.save_named(source)
        _event(source, "create", actor, request_id, headers)
        job = start_sync(source, actor=actor)
    source.refresh_from_db()
    return SourceAdded(source, job)


LIMITS = ("timeout_seconds", "max_result_bytes")
EDITABLE = ("url", "headers", *LIMITS)


@dataclass(frozen=True)
class SourceUpdate:
    """An edited source, and the headers whose stored values a change of the
    url's origin dropped (names only), for the caller to tell the person."""

    source: Source
    headers_dropped: list[str]


def update_source(
    source: Source,
    changes: dict[str, Any],
    *,
    actor: Actor,
    request_id: uuid.UUID | None = None,
) -> SourceUpdate:
    """Change a source's url, headers or limits; the name (its tools' namespace)
    and the kind are fixed once made. A url of another origin (scheme, host,
    port) never carries the stored header values: only those the same change
    sets again are kept (a masked value is not set again), the others are
    dropped, and the audit event names them."""
    require_manager(actor, source.catalog)
    _check_editable(source, changes)
    with transaction.atomic():
        source = (
            Source.objects.select_for_update()
            .select_related("catalog")
            .get(pk=source.pk)
        )
        previous = _readable_headers(source)
        headers, dropped = _new_headers(source, changes, previous)
        changed = [f for f in ("url", *LIMITS) if _set(source, f, changes)]
        if headers is not None and ("headers" in changes or "url" in changed):
            # Always with the current key (saving the headers is how a key
            # rotates), and bound to the url's origin.
            source.headers_encrypted = encrypt_headers(headers, source.url)
        if headers is not None and headers != previous:
            changed.insert(0, "headers")
        if not changed:
            if "headers" in changes:
                source.save(update_fields=["headers_encrypted"])
            return SourceUpdate(source, [])
        _check(source)
        fields = [f for f in changed if f != "headers"]
        source.save(update_fields=[*fields, "headers_encrypted", "updated"])
        _event(source, "update", actor, request_id, headers or {}, changed, dropped)
    return SourceUpdate(source, dropped)


def dropped_warning(names: list[str]) -> str:
    """What a person is told when a new origin dropped stored header values."""
    return (
        f"headers: the url's origin changed, so the stored values of "
        f"{', '.join(names)} were dropped; enter them again if the new server "
        "needs them"
    )


def _check_editable(source: Source, changes: dict[str, Any]) -> None:
    for field in ("name", "kind"):
        if field in changes and changes[field] != getattr(source, field):
            raise ValidationError(
                {field: [f"{field}: cannot be changed; delete and add the source"]}
            )
    unknown = sorted(set(changes) - {*EDITABLE, "name", "kind"})
    if unknown:
        raise ValidationError({unknown[0]: [f"{unknown[0]}: not a source field"]})
    if source.kind == SourceKind.STDIO:
        for field in ("url", "headers"):
            if changes.get(field):
                raise ValidationError({field: [STDIO_FIXED.format(field=field)]})


def _readable_headers(source: Source) -> dict[str, str] | None:
    """The stored headers; None when they cannot be read (an unknown key, another
    origin): the person enters them again, as the error they cause says."""
    try:
        return decrypt_headers(source)
    except HeadersUnreadable:
        return None


UNREADABLE = "(unreadable headers)"


def _new_headers(
    source: Source, changes: dict[str, Any], previous: dict[str, str] | None
) -> tuple[dict[str, str] | None, list[str]]:
    """The headers after ``changes`` (None: the stored text stays as it is, being
    unreadable and not replaced), and the names of the stored values a new origin
    dropped, as a browser drops credentials on a cross-origin redirect."""
    given = changes.get("headers")
    if "url" in changes and origin(str(changes["url"])) != origin(source.url):
        if isinstance(given, dict):
            # A masked value stands for the stored one, which stays with the old
            # origin: it is not set again.
            given = {name: value for name, value in given.items() if value != MASK}
        headers = clean_headers(given)
        stored = set(previous) if previous is not None else {UNREADABLE}
        if not source.headers_encrypted:
            stored = set()
        return headers, sorted(stored - set(headers))
    if "headers" in changes:
        return clean_headers(given, previous or {}), []
    return previous, []


def _set(source: Source, field: str, changes: dict[str, Any]) -> bool:
    """Set ``field`` from ``changes``; whether it changed."""
    if field not in changes or changes[field] == getattr(source, field):
        return False
    setattr(source, field, changes[field])
    return True


def delete_source(
    source: Source, *, actor: Actor, request_id: uuid.UUID | None = None
) -> None:
    """Delete a source. The tools it brought stay in the catalog, disabled (each a
    ``tool_changed`` event), for their history and audit trail."""
    require_manager(actor, source.catalog)
    with transaction.atomic():
        source = (
            Source.objects.select_for_update()
            .select_related("catalog")
            .get(pk=source.pk)
        )
        for link in source.links.select_related("tool"):
            if link.tool.status == ToolStatus.ACTIVE:
                set_tool_status(
                    link.tool, ToolStatus.DISABLED, actor=actor, request_id=request_id
                )
        try:
            headers = decrypt_headers(source)
        except Exception:  # unreadable headers must not stop a delete
            headers = {}
        _event(source, "delete", actor, request_id, headers)
        source.delete()


def start_sync(source: Source, *, actor: Actor) -> Job:
    """Queue a sync of ``source`` (a Job of kind ``sync``); a sync already queued
    or running for it is returned instead of a second one."""
    with transaction.atomic():
        source = Source.objects.select_for_update().get(pk=source.pk)
        waiting = Job.objects.filter(
            kind=JobKind.SYNC,
            catalog_id=source.catalog_id,
            state__in=[JobState.QUEUED, JobState.RUNNING],
            options__source_id=source.pk,
        ).first()
        if waiting is not None:
            return waiting
        job = Job.objects.create(
            kind=JobKind.SYNC,
            catalog_id=source.catalog_id,
            options={"source_id": source.pk, "source": source.name},
            created_by=stored_user(actor),
        )
        if source.status != SourceStatus.SYNCING:
            source.status = SourceStatus.SYNCING
            source.save(update_fields=["status", "updated"])
        jobs.enqueue_job(job)
    return job
