"""What the MCP tools do, in Django terms: one selection (exactly POST
/api/v1/select's service call), tool details, and a tool call (exactly POST
/api/v1/tool-calls/execute's service call), for an authenticated caller.

Sync code run in a worker thread of the MCP server (``gateway.server``); every
call closes stale database connections before and after, as Django's request
cycle does. Every refusal (``ToolRefused``) is an audit row before it is
answered (``gateway.refusals``); a call's other refusals are the call path's.
A model's bad input of the Django kind (``full_clean``) is a refusal naming the
field, as the API answers it, never an internal error."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import (
    DatabaseError,
    InterfaceError,
    OperationalError,
    close_old_connections,
)
from django.http import Http404
from rest_framework.exceptions import APIException, ValidationError

from audit.actors import Caller
from audit.writer import PendingEvent, wait_all
from calls.answers import CallAnswer
from calls.input import call_input
from calls.services import CallNotRecorded, execute_call
from catalog.formats import export_tool
from catalog.lookups import get_catalog_for_user
from catalog.models import Tool
from catalog.names import Ambiguous
from catalog.services.tools import tool_to_spec
from config import jsonparse
from config.api_errors import first_message, validation_fields
from config.middleware import DATABASE_DOWN as DATABASE_UNREACHABLE
from config.middleware import database_trouble
from config.ratelimit import charge_caller
from gateway import refusals
from gateway.inbound import Problem
from gateway.listing import cursor_for
from identity.access import access_for
from selection.api.input import select_input
from selection.engine import RequestError
from selection.requests import build_request
from selection.services.select import select_tools
from selection.services.validate import find_tool

log = logging.getLogger(__name__)
CHANNEL = "mcp"
NOT_RECORDED = "audit: the answer could not be recorded, so it was not given; try again"
DATABASE_DOWN = "database: unavailable, nothing was called; try again shortly"
FAILED = "internal: the request failed and was logged (request {})"
MAX_NAMES = 50
# The argument names of search_tools, as the select API calls them.
RENAMED = {"max_results": "max_candidates"}


T = TypeVar("T")


class ToolFailure(Exception):
    """An error result the agent can read (an MCP tool error); as such, an
    outage or an answer that could not be recorded."""


class ToolRefused(ToolFailure):
    """A refusal naming the field and the rule (``field: rule``): recorded."""

    @property
    def field(self) -> str:
        return str(self).split(":", 1)[0]


def database_down(exc: BaseException) -> str:
    """The tool error for a database error: busy or unavailable, and that
    nothing was called (``config.middleware.database_trouble``)."""
    detail, _ = database_trouble(exc)
    if detail == DATABASE_UNREACHABLE:
        return DATABASE_DOWN
    return detail.replace("; try again", ", nothing was called; try again")


class UnknownTool(ToolRefused):
    """A tool called by its own name that no catalog of the key's holds: the
    specification's unknown-tool error rather than a tool result."""


def _guarded(
    attempt: refusals.Attempt, problem: Problem | None, work: Callable[[], T]
) -> T:
    """``work`` for one tool, with Django's connection hygiene; ``problem`` is a
    refusal found before it (gateway.inbound). A refusal is recorded before it
    is answered; a database error is never shown as it is (it quotes values)."""
    close_old_connections()
    try:
        if problem is not None:
            raise ToolRefused(str(problem))
        try:
            return work()
        except DjangoValidationError as exc:  # a model's full_clean: as REST's 400
            raise ToolRefused(first_message(validation_fields(exc))) from exc
    except ToolRefused as exc:
        try:
            refusals.record(attempt, str(exc), field=exc.field)
        except refusals.NotRecorded as lost:
            raise ToolFailure(str(lost)) from exc
        raise
    except (OperationalError, InterfaceError) as exc:
        log.warning("MCP %s: database unavailable: %s", attempt.tool, exc)
        raise ToolFailure(database_down(exc)) from exc
    except DatabaseError as exc:
        log.exception("MCP %s failed (request %s)", attempt.tool, attempt.request_id)
        raise ToolFailure(FAILED.format(attempt.request_id)) from exc
    finally:
        close_old_connections()


def _charge(attempt: refusals.Attempt) -> None:
    """1 of the caller's budget; past it a refusal naming the limit."""
    try:
        charge_caller(attempt.user, 1)
    except APIException as exc:
        attempt.over_budget = True
        raise ToolRefused(str(exc.detail)) from exc
    attempt.charged = True


def search(
    user: Caller,
    arguments: dict[str, Any],
    request_id: uuid.UUID,
    problem: Problem | None = None,
) -> dict:
    """One selection, as POST /api/v1/select runs it (same validation, policy,
    cache and audit row, its channel ``mcp``), costing 1 of the caller's budget."""
    attempt = refusals.Attempt(
        user, request_id, "tools/call", "search_tools", arguments
    )
    return _guarded(attempt, problem, lambda: _search(attempt, arguments))


def _search(attempt: refusals.Attempt, arguments: dict[str, Any]) -> dict:
    unknown = sorted(set(arguments) - {*SEARCH_ARGUMENTS})
    if unknown:
        raise ToolRefused(f"{unknown[0]}: is not an argument of search_tools")
    data = {RENAMED.get(key, key): value for key, value in arguments.items()}
    try:
        valid = select_input({**data, "format": "mcp"})
    except ValidationError as exc:
        raise ToolRefused(_renamed(first_message(exc.detail))) from exc
    pending: list[PendingEvent] = []  # the row commits while the answer is shaped
    _charge(attempt)
    try:
        catalog = get_catalog_for_user(attempt.user, valid["catalog"])
        answer = select_tools(
            catalog,
            build_request(access_for(attempt.user), valid),
            fmt="mcp",
            actor=attempt.user,
            request_id=attempt.request_id,
            pending=pending,
            channel=CHANNEL,
        )
    except RequestError as exc:
        field, message = next(iter(exc.errors.items()))
        raise ToolRefused(_renamed(f"{field}: {message}")) from exc
    except Http404 as exc:
        raise ToolRefused(f"catalog: no catalog {valid['catalog']!r}") from exc
    except ValidationError as exc:
        raise ToolRefused(_renamed(first_message(exc.detail))) from exc
    except APIException as exc:  # the API's own words
        raise ToolRefused(str(exc.detail)) from exc
    return _found(answer, pending)


def _found(answer: Any, pending: list[PendingEvent]) -> dict:
    """The answer's MCP Tool objects, once its audit row is committed."""
    tools = [
        {**mcp_tool(pick.definition), "score": pick.score, "reason": pick.reason}
        for pick in answer.tools
    ]
    try:
        wait_all(pending)  # as /select: no answer leaves without its audit row
    except Exception as exc:
        log.warning("MCP search not recorded, answer withheld: %s", exc)
        raise ToolFailure(NOT_RECORDED) from exc  # no row: nothing to refuse
    found = {"selection_id": answer.selection_id, "catalog": answer.catalog}
    if tools:  # tools/list with it lists these (gateway.listing)
        names = [tool["name"] for tool in tools]
        found["list_cursor"] = cursor_for(answer.catalog, names)
    if answer.words_only:  # ranked by words alone: the model should know
        found["words_only_reason"] = answer.words_only_reason
    if answer.no_tool is not None:  # say why no tool fits
        return {**found, "tools": tools, "no_tool": answer.no_tool}
    return {**found, "tools": tools}


def details(
    user: Caller,
    arguments: dict[str, Any],
    request_id: uuid.UUID,
    problem: Problem | None = None,
) -> dict:
    """The MCP Tool objects of ``names`` the caller could be offered; a name the
    caller could never be offered and a made-up one are both ``not_found``. A
    read: only its refusals cost (and are recorded)."""
    attempt = refusals.Attempt(
        user, request_id, "tools/call", "get_tool_details", arguments
    )
    return _guarded(attempt, problem, lambda: _details(user, arguments))


def _details(user: Caller, arguments: dict[str, Any]) -> dict:
    unknown = sorted(set(arguments) - {"names", "catalog"})
    if unknown:
        raise ToolRefused(f"{unknown[0]}: is not an argument of get_tool_details")
    names = arguments.get("names")
    if (
        not isinstance(names, list)
        or not names
        or len(names) > MAX_NAMES
        or not all(isinstance(name, str) and 0 < len(name) <= 200 for name in names)
    ):
        raise ToolRefused(f"names: give 1 to {MAX_NAMES} tool names (strings)")
    slug = arguments.get("catalog", "default")
    if not isinstance(slug, str):
        raise ToolRefused("catalog: must be a catalog slug (string)")
    try:
        catalog = get_catalog_for_user(user, slug)
    except Http404 as exc:
        raise ToolRefused(f"catalog: no catalog {slug!r}") from exc
    access = access_for(user)
    tools, not_found = [], []
    for name in dict.fromkeys(names):  # once each, in the order asked
        try:
            tool = find_tool(catalog, name, access)
        except Ambiguous as exc:
            raise ToolRefused(str(exc)) from exc
        if tool is None:
            not_found.append(name)
        else:
            tools.append(mcp_tool(export_tool(tool_to_spec(tool), "mcp")))
    return {"catalog": catalog.slug, "tools": tools, "not_found": not_found}


def call(
    user: Caller,
    arguments: dict[str, Any],
    request_id: uuid.UUID,
    problem: Problem | None = None,
    direct: bool = False,
) -> CallAnswer:
    """One tool call, as POST /api/v1/tool-calls/execute runs it (same order,
    approval and audit rows, its channel ``mcp``), costing 1 of the budget
    (``direct``: the tool was called by its own name). What the call path
    refuses is its ``tool_call`` row, as over REST; what is refused before it
    (malformed input, the budget, a catalog the key may not see: over REST a
    4xx and no row) is the gateway's ``mcp_refused`` row, never a call's."""
    name = arguments.get("name")
    tool = jsonparse.printable(name)[:200] if isinstance(name, str) else "call_tool"
    attempt = refusals.Attempt(user, request_id, "tools/call", tool, arguments)
    return _guarded(attempt, problem, lambda: _call(attempt, arguments, direct))


def _call(
    attempt: refusals.Attempt, arguments: dict[str, Any], direct: bool
) -> CallAnswer:
    user = attempt.user
    try:
        valid = call_input(arguments)
    except ValidationError as exc:
        raise ToolRefused(first_message(exc.detail)) from exc
    approval = valid.get("approval_id")
    catalog = valid.get("catalog")
    _charge(attempt)
    try:
        if not catalog and valid.get("selection_id") is None:
            catalog = _catalog_of(user, valid["name"])
        return execute_call(
            user,
            name=valid["name"],
            arguments=valid["arguments"],
            catalog=catalog,
            selection_id=valid.get("selection_id"),
            approval_id=str(approval) if approval else None,
            request_id=attempt.request_id,
            channel=CHANNEL,
        )
    except Http404 as exc:
        if direct:  # no catalog of the key's holds the name: no such tool
            raise UnknownTool(f"name: no tool {valid['name']!r}") from exc
        raise ToolRefused(str(exc)) from exc
    except APIException as exc:  # the API's own words
        raise ToolRefused(str(exc.detail)) from exc
    except CallNotRecorded as exc:
        raise ToolFailure(str(exc)) from exc


def _catalog_of(user: Caller, name: str) -> str | None:
    """The one catalog where the caller may see a tool of this name (None:
    ``default``); a name in several is for call_tool's ``catalog`` to settle."""
    slugs = Tool.objects.catalogs_calling(access_for(user), name)
    if len(slugs) > 1:
        raise ToolRefused(f"catalog: {name!r} is in several catalogs; name one")
    return slugs[0] if slugs else None


def mcp_tool(definition: dict[str, Any]) -> dict[str, Any]:
    """An MCP Tool object with all four hints set from the tool's flags: read-only
    (the ``read-only`` capability or a stored hint), destructive (unsafe tools
    always), idempotent (read-only tools, or a stored hint), open world (the
    stored hint, else MCP's default: true)."""
    tool = dict(definition)  # shared definitions are never changed
    hints = dict(tool.get("annotations") or {})
    read_only = hints.get("readOnlyHint") is True
    destructive = hints.get("destructiveHint") is True
    hints["readOnlyHint"] = read_only and not destructive
    hints["destructiveHint"] = destructive
    hints["idempotentHint"] = hints.get("idempotentHint") is True or (
        read_only and not destructive
    )
    hints["openWorldHint"] = hints.get("openWorldHint") is not False
    tool["annotations"] = hints
    return tool


def _renamed(message: str) -> str:
    for ours, theirs in RENAMED.items():
        message = message.replace(theirs, ours)
    return message


SEARCH_ARGUMENTS = {
    "query": {
        "description": "What the agent needs to do (text), or a JSON object",
        "anyOf": [{"type": "string", "minLength": 1}, {"type": "object"}],
    },
    "messages": {
        "description": "The chat so far (role/content objects), instead of query",
        "type": "array",
        "items": {"type": "object"},
        "maxItems": 500,
    },
    "max_results": {
        "description": "How many tools at most (default 3)",
        "type": "integer",
        "minimum": 1,
    },
    "catalog": {"description": "Catalog slug (default: default)", "type": "string"},
    "categories": {
        "description": "Only tools of these categories",
        "type": "array",
        "items": {"type": "string"},
    },
}
DETAILS_ARGUMENTS = {
    "names": {
        "description": "Tool names, as search_tools answered them",
        "type": "array",
        "items": {"type": "string"},
        "minItems": 1,
        "maxItems": MAX_NAMES,
    },
    "catalog": {"description": "Catalog slug (default: default)", "type": "string"},
}
CALL_ARGUMENTS = {
    "name": {
        "description": "The tool's name, as search_tools answered it",
        "type": "string",
        "minLength": 1,
        "maxLength": 200,
    },
    "arguments": {"description": "The tool's arguments", "type": "object"},
    "catalog": {"description": "Catalog slug (default: the tool's)", "type": "string"},
    "selection_id": {
        "description": "The search_tools answer that offered the tool",
        "type": "string",
    },
    "approval_id": {
        "description": "The approval a person gave this exact call",
        "type": "string",
    },
}
