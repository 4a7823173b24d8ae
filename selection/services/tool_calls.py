"""Deciding a model's tool calls: which tool, may it be called here, are the
arguments right, and what should the model be told (parse -> validate -> decide).
One audit event per request, linked to the selection it answers.

Each call gets flags from a fixed set; ``parse_error``, ``unknown_tool``,
``not_offered`` and ``not_allowed`` make it invalid. An unknown tool and one the
caller could never see are indistinguishable on purpose: hiding is access control.
Every flag: docs/reference/tool-calls.md.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from django.http import Http404
from jsonschema.exceptions import ValidationError
from referencing.exceptions import Unresolvable

from audit.actors import Actor, Caller
from audit.choices import EventType
from audit.models import AuditEvent
from audit.services import record_event
from catalog.models import Catalog, Tool, ToolChange
from catalog.names import ambiguous, called_tools
from catalog.querysets import tool_visible
from catalog.schema_policy import (
    SchemaPolicyError,
    get_validator,
    join_pointer,
    validate_arguments,
)
from catalog.services.tools import tool_to_spec
from catalog.versions import sight_of, visible_version
from config.lookups import any_of
from identity.access import Access
from selection.adapters.snapshots import get_snapshot
from selection.engine.policy import kept_policy_codes, policy_codes
from selection.engine.types import HIDDEN, POLICY_REASONS, SelectionRequest
from selection.querysets import StoredSettings
from selection.toolcalls.hints import join_hints, schema_hints
from selection.toolcalls.parse import ParsedOutput, ToolCall
from telemetry import tracing

FLAGS = (
    "parse_error",
    "unknown_tool",
    "not_offered",
    "not_allowed",
    "unsafe",
    "requires_approval",
    "no_schema",
    "stale_version",
)
BLOCKING_FLAGS = frozenset(FLAGS[:4])
_WHY_NOT_ALLOWED = {
    "status": "it is not active",
    "blocked": "the request blocked it",
    "not_allowed": "the request's allow list does not name it",
    "unsafe": "it is unsafe and unsafe tools were not allowed",
    "role": "the caller's roles may not use it",
    "no_schema_mode": "it has no schema and its no-schema mode is not allowed",
    "capability": "it lacks a capability the request required",
    "budget_cost": "it costs more per call than the request allowed",
    "category": "its category was not one the request asked for",
    "gone": "it changed while this was checked; try again",
    "selection_caller": "the selection's caller could never be offered it",
}


@dataclass(frozen=True)
class LinkedSelection:
    """The recorded selection a set of calls answers: its picks (name -> recorded
    version and content hash) and the request it was made with."""

    selection_id: str
    catalog_slug: str
    created: datetime
    picks: dict[str, dict[str, Any]]
    request: SelectionRequest | None


@dataclass(frozen=True)
class _Context:
    catalog: Catalog
    selection: LinkedSelection | None
    tools: dict[str, Tool]
    not_allowed: dict[str, str]
    # Called names several tools held before the one-name rule (catalog.names).
    ambiguous: set[str] = field(default_factory=set)


def get_selection_for_caller(
    access: Access, selection_id: uuid.UUID, *, caller: Caller
) -> LinkedSelection:
    """The recorded selection if the caller made it (compliance and admins: any
    selection) in a catalog it may see, else 404 naming ``selection_id``.

    Another caller's selection and an unknown id are one answer from one query of
    the same shape: the owner and catalog are conditions of the query, so neither
    the status, the body nor the work done tells them apart."""
    events = AuditEvent.objects.filter(
        event_type=EventType.SELECTION, selection_id=selection_id
    )
    if not access.can_audit:
        owner = getattr(caller, "pk", None)
        # No pk (nobody): no selection, never the ones with a NULL actor.
        events = events.filter(actor_id=owner) if owner else events.none()
    if access.catalogs is not None:
        events = events.filter(any_of("catalog_slug", access.catalogs))
    event = events.only(
        "selection_id", "catalog_slug", "created", "input", "output"
    ).first()
    if event is None or not access.may_see_catalog(event.catalog_slug):
        raise Http404(f"selection_id: no selection {str(selection_id)!r}")
    tools = event.output.get("tools") if isinstance(event.output, dict) else None
    picks = {
        str(pick["name"]): pick
        for pick in tools or []
        if isinstance(pick, dict) and "name" in pick
    }
    return LinkedSelection(
        selection_id=str(selection_id),
        catalog_slug=event.catalog_slug,
        created=event.created,
        picks=picks,
        request=_recorded_request(event.input),
    )


def _recorded_request(recorded: Any) -> SelectionRequest | None:
    """The selection's request as recorded (lists back to tuples), if readable."""
    data = recorded.get("request") if isinstance(recorded, dict) else None
    if not isinstance(data, dict):
        return None
    known = {f.name for f in fields(SelectionRequest)}
    values: dict[str, Any] = {
        key: tuple(value) if isinstance(value, list) and key != "messages" else value
        for key, value in data.items()
        if key in known
    }
    try:
        return SelectionRequest(**values)
    except TypeError:
        return None


def validate_tool_calls(
    catalog: Catalog,
    parsed: ParsedOutput,
    *,
    access: Access,
    selection: LinkedSelection | None,
    actor: Actor,
    request_id: uuid.UUID | None = None,
) -> dict[str, Any]:
    """Each call decided and validated; the whole request is one audit event."""
    names = sorted({call.name for call in parsed.calls})
    tools = _lookup(catalog, access, names)
    denied = _not_allowed(catalog, access, selection, tools)
    unknown = [name for name in names if name not in tools]
    context = _Context(
        catalog, selection, tools, denied, ambiguous(catalog, unknown, access)
    )
    results = [_decide(call, context) for call in parsed.calls]
    answer = {
        "selection_id": selection.selection_id if selection else None,
        "catalog": catalog.slug,
        "catalog_version": visible_version(catalog, sight_of(access)),
        "format": parsed.format,
        "valid": all(result["valid"] for result in results),
        "calls": results,
    }
    return record_validation(
        catalog,
        actor=actor,
        request_id=request_id,
        summary=_summary(results),
        input=_audit_input(parsed, selection),
        output=answer,
    )


def record_validation(
    catalog: Catalog,
    *,
    actor: Actor,
    request_id: uuid.UUID | None,
    summary: str,
    input: dict[str, Any],
    output: dict[str, Any],
) -> dict[str, Any]:
    """A validation's audit row; the answer ``output`` with its ``validation_id``."""
    event = record_event(
        EventType.VALIDATION,
        actor=actor,
        request_id=request_id,
        catalog_slug=catalog.slug,
        catalog_version=catalog.version,
        summary=summary,
        input=input,
        output=output,
    )
    return {"validation_id": str(event.request_id), **output}


def _lookup(
    catalog: Catalog, access: Access, names: list[str], related: tuple[str, ...] = ()
) -> dict[str, Tool]:
    """Called name -> the one tool the caller may see that it calls, by its
    name or the provider-safe name the model was shown (seed 003; one name is
    one tool: ``catalog.names``); ``related``: relations to fetch with it."""
    return called_tools(catalog, names, access, related)


def _widest_request(access: Access) -> SelectionRequest:
    """The most any selection by this caller could offer (see selection.requests)."""
    whole = access.sees_whole_catalog
    return SelectionRequest(
        query="",
        allow_unsafe=access.allow_unsafe,
        roles=access.roles,
        visible_roles=None if whole else access.roles,
        visible_unsafe=whole or access.allow_unsafe,
        visible_held=whole,
    )


def _not_allowed(
    catalog: Catalog,
    access: Access,
    selection: LinkedSelection | None,
    tools: dict[str, Tool],
    stored: StoredSettings | None = None,
) -> dict[str, str]:
    """Tool name -> the first policy rule that keeps it from being called here:
    the caller's widest request, then the linked selection's own request."""
    if not tools:
        return {}
    snapshot, _ = get_snapshot(catalog, stored)
    requests = [_widest_request(access)]
    if selection is not None and selection.request is not None:
        requests.append(selection.request)
    reasons: dict[str, str] = {}
    for position, request in enumerate(requests):
        # The caller's widest request holds no text: its codes are kept with
        # the snapshot (a selection's request may hold messages: computed).
        codes = (
            kept_policy_codes(snapshot, request)
            if position == 0
            else policy_codes(snapshot, request)
        )
        for tool in tools.values():
            row = snapshot.by_name.get(tool.name)
            if tool.name in reasons:
                continue
            if row is None:
                reasons[tool.name] = "gone"
            elif codes[row]:
                reason = POLICY_REASONS[int(codes[row]) - 1]
                # Hidden from the selection's caller, not from this one.
                hidden_there = position > 0 and reason == HIDDEN
                reasons[tool.name] = "selection_caller" if hidden_there else reason
    return reasons


def _decide(call: ToolCall, context: _Context) -> dict[str, Any]:
    """One call's answer: flags, argument errors, validated arguments and a hint."""
    tool = context.tools.get(call.name)
    reason = context.not_allowed.get(tool.name, "") if tool is not None else ""
    if tool is None or reason == HIDDEN:
        return _unknown(call, call.name in context.ambiguous)
    flags = _tool_flags(call, tool, context, reason)
    spec = tool_to_spec(tool)
    key = f"{tool.pk}:{tool.content_hash}"
    errors: list[dict[str, str]] = []
    checked_args: dict[str, Any] | None = None
    hints: list[str] = []
    if call.arguments is None:
        errors.append({"pointer": "", "rule": "parse", "message": call.parse_error})
        hints.append(f"the arguments must be one JSON object ({call.parse_error})")
    else:
        check = validate_arguments(spec, call.arguments, key=key)
        errors = [
            {"pointer": e.pointer, "rule": e.rule, "message": e.message}
            for e in check.errors
        ]
        checked_args = check.arguments
        hints.extend(_argument_hints(tool, call.arguments, key, errors))
    hints[:0] = _flag_hints(tool, flags, reason)
    valid = checked_args is not None and not BLOCKING_FLAGS & set(flags)
    return _result(call, tool, valid, errors, flags, checked_args, hints)


def _tool_flags(
    call: ToolCall, tool: Tool, context: _Context, reason: str
) -> list[str]:
    """The flags a known, visible tool's call carries, in ``FLAGS`` order."""
    selection = context.selection
    found = {
        "parse_error": call.arguments is None,
        "not_offered": selection is not None and tool.name not in selection.picks,
        "not_allowed": bool(reason),
        "unsafe": not tool.safe,
        "requires_approval": tool.requires_approval
        or (tool.parameters is None and tool.no_schema_mode == "human-approval"),
        "no_schema": tool.parameters is None,
        "stale_version": selection is not None and _is_stale(selection, tool),
    }
    return [flag for flag in FLAGS if found.get(flag)]


def _is_stale(selection: LinkedSelection, tool: Tool) -> bool:
    """Did the tool change after the selection offered it?

    Selections record each pick's version and content hash; an older record
    without them falls back to the tool's change history since the selection."""
    pick = selection.picks.get(tool.name)
    if pick is None:
        return False
    if "version" in pick:
        return pick["version"] != tool.version or (
            pick.get("content_hash", tool.content_hash) != tool.content_hash
        )
    return ToolChange.objects.filter(tool=tool, created__gt=selection.created).exists()


def _flag_hints(tool: Tool, flags: list[str], reason: str) -> list[str]:
    name = f"`{tool.provider_name or tool.name}`"
    hints = []
    if "not_offered" in flags:
        hints.append(f"{name} was not offered for this request; use an offered tool")
    if "not_allowed" in flags:
        why = _WHY_NOT_ALLOWED.get(reason, reason)
        hints.append(f"{name} may not be called here: {why}")
    return hints


def _argument_hints(
    tool: Tool, arguments: dict[str, Any], key: str, errors: list[dict[str, str]]
) -> list[str]:
    """Sentences for the argument errors, read from the validator's own errors."""
    if not errors:
        return []
    if tool.parameters is None:
        return [
            f"`{tool.provider_name or tool.name}` cannot be called without a schema"
        ]
    try:
        validator = get_validator(tool.parameters, key)
        raw = sorted(validator.iter_errors(arguments), key=_error_order)
    except (SchemaPolicyError, Unresolvable):
        return ["the tool's schema cannot be used; do not call it"]
    return schema_hints(raw)


def _error_order(error: ValidationError) -> tuple[str, str]:
    return join_pointer("", error.absolute_path), str(error.validator)


def _unknown(call: ToolCall, several: bool = False) -> dict[str, Any]:
    """A tool that does not exist for this caller: the name as called, no more;
    or a name several tools held before the one-name rule (``several``, said
    only to a caller who sees a tool of that exact name)."""
    flags = ["unknown_tool"]
    if call.arguments is None:
        flags.insert(0, "parse_error")
    hint = f"there is no tool `{call.name}`; call only the tools you were offered"
    if several:
        hint = (
            f"`{call.name}` names more than one tool of this catalog (names stored "
            "before the one-name rule); it cannot be called until a curator "
            "renames all but one"
        )
    return {
        "tool": call.name,
        "call_id": call.call_id,
        "valid": False,
        "errors": [],
        "flags": flags,
        "arguments": None,
        "hint": hint,
        "tool_version": None,
    }


def _result(
    call: ToolCall,
    tool: Tool,
    valid: bool,
    errors: list[dict[str, str]],
    flags: list[str],
    arguments: dict[str, Any] | None,
    hints: list[str],
) -> dict[str, Any]:
    return {
        "tool": tool.name,
        "call_id": call.call_id,
        "valid": valid,
        "errors": errors,
        "flags": flags,
        "arguments": arguments if valid else None,
        "hint": "" if valid else join_hints(hints),
        "tool_version": tool.version,
    }


def _summary(results: list[dict[str, Any]]) -> str:
    valid = sum(1 for result in results if result["valid"])
    names = ", ".join(str(result["tool"]) for result in results[:5]) or "no call"
    return f"{len(results)} tool call(s), {valid} valid: {names}"


def _audit_input(
    parsed: ParsedOutput, selection: LinkedSelection | None
) -> dict[str, Any]:
    """What the model asked for, as called (not the provider's whole response)."""
    return {
        "kind": "tool_calls",
        "selection_id": selection.selection_id if selection else None,
        "format": parsed.format,
        "calls": [
            {
                "name": call.name,
                "call_id": call.call_id,
                "format": call.format,
                "arguments": call.raw_arguments,
            }
            for call in parsed.calls
        ],
    }


@tracing.traced("quiver.call.validation")
def decide_call(
    catalog: Catalog,
    access: Access,
    selection: LinkedSelection | None,
    name: str,
    arguments: dict[str, Any],
    read: list[Tool] | None = None,
    stored: StoredSettings | None = None,
) -> tuple[Tool | None, dict[str, Any]]:
    """One call decided exactly as tool-calls/validate decides it (flags, errors,
    repair hint), without its audit row: the caller records its own. The tool is
    None when the caller may not know of it. ``read``: the catalog's tools named
    ``name`` (by name or provider name) as the caller read them (calls.reads),
    whoever may see them; else they are looked up here. ``stored``: the
    catalog's settings row read with it, else read here."""
    call = ToolCall(0, name, None, arguments, arguments, "", "canonical")
    if read is None:
        tools = _lookup(catalog, access, [name])
    else:
        visible = [tool for tool in read if tool_visible(access, tool)]
        tools = {name: visible[0]} if visible else {}
    denied = _not_allowed(catalog, access, selection, tools, stored)
    context = _Context(catalog, selection, tools, denied)
    result = _decide(call, context)
    known = "unknown_tool" not in result["flags"]
    return (tools.get(name) if known else None), result


def not_allowed_reason(catalog: Catalog, access: Access, tool: Tool) -> str:
    """The policy rule that keeps a visible ``tool`` from ever being called by
    this caller (``""`` when none): the one rule of ``not_allowed``, shared by
    POST validate."""
    return _not_allowed(catalog, access, None, {tool.name: tool}).get(tool.name, "")


def why_not_allowed(tool: Tool, reason: str) -> str:
    """The hint for a call ``reason`` keeps from being made."""
    return join_hints(_flag_hints(tool, ["not_allowed"], reason))
