"""Writes to tools: create, update, delete, each with its change record.

Every write runs in one transaction, checks the schema policy (fail closed), keeps an
append-only ToolChange, bumps the catalog version and, once committed, asks a worker to
(re-)embed the tool.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from audit.actors import Actor, stored_user
from catalog import names
from catalog.choices import ChangeAction, EmbeddingStatus, ImportOutcome, ToolStatus
from catalog.formats import estimate_prompt_tokens
from catalog.models import Catalog, Tool
from catalog.names import ToolConflict as ToolConflict
from catalog.naming import hidden_characters, looks_of, name_problems
from catalog.schema_policy import check_tool_schema
from catalog.services import holds, work
from catalog.services.changes import RELEARN_TASK as RELEARN_TASK
from catalog.services.changes import content_hash, spec_json, write_status
from catalog.services.changes import record_change as _record
from catalog.services.changes import tool_to_spec as tool_to_spec
from catalog.sizes import MAX_TOOL_CHARS, oversized_fields
from catalog.spec import ToolSpec

# Who made a change: a user (a person or an API client's service user), an
# anonymous user, or None for the system itself (bootstrap, imports' worker).

PROVIDER_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
# Foreign keys the service itself sets from objects it holds: full_clean would
# spend one query each checking that they exist.
_SET_BY_SERVICE = ["catalog", "created_by", "updated_by"]
_SPEC_FIELDS = [name for name in ToolSpec.field_names() if name != "name"]
# A change reason is a sentence or two for the history, not a document.
MAX_REASON_CHARS = 500
MAX_ORIGINAL_NAME_CHARS = 500


@dataclass(frozen=True)
class WriteResult:
    tool: Tool | None
    outcome: ImportOutcome


def check_spec(spec: ToolSpec, *, new_name: bool = True) -> None:
    """Raise ValidationError naming each field and rule the spec breaks.

    ``new_name``: the spec makes a tool or renames one, so its name must also keep
    the character rule (``catalog.naming.name_problems``); a tool that keeps a name
    stored before the rule stays editable (the ``catalog.W001`` check reports it)."""
    errors = spec_errors(spec, new_name=new_name)
    if errors:
        raise ValidationError(errors)


def spec_errors(spec: ToolSpec, *, new_name: bool = True) -> dict[str, list[str]]:
    """What ``check_spec`` refuses, as messages per field; a spec past the stored
    size limit is refused on that alone, before any other check (bounds work)."""
    oversized = oversized_fields(spec.to_dict(), MAX_TOOL_CHARS)
    if oversized:
        return {k or "tool": [rule] for k, rule in oversized.items()}
    errors: dict[str, list[str]] = {}
    if not spec.name.strip():
        errors.setdefault("name", []).append("name: must not be empty")
    if len(spec.name) > 200:
        errors.setdefault("name", []).append("name: must be at most 200 characters")
    hidden = hidden_characters(spec.name)
    if hidden:
        errors.setdefault("name", []).append(
            "name: must not contain invisible or direction-changing characters "
            f"({', '.join(hidden)})"
        )
    if new_name:
        errors.setdefault("name", []).extend(name_problems(spec.name))
    errors.setdefault("original_name", []).extend(original_name_problems(spec))
    for problem in check_tool_schema(spec):
        field = problem.pointer.strip("/").split("/")[0] or "parameters"
        errors.setdefault(field, []).append(
            f"{problem.pointer or '/'}: {problem.rule}: {problem.message}"
        )
    if spec.provider_name and not PROVIDER_NAME_RE.fullmatch(spec.provider_name):
        errors.setdefault("provider_name", []).append(
            "provider_name: must match ^[a-zA-Z0-9_-]{1,64}$"
        )
    return {field: messages for field, messages in errors.items() if messages}


def original_name_problems(spec: ToolSpec) -> list[str]:
    """An original name is shown and searched like a name: bounded, and never
    hiding characters."""
    original = spec.original_name
    if len(original) > MAX_ORIGINAL_NAME_CHARS:
        return [f"original_name: must be at most {MAX_ORIGINAL_NAME_CHARS} characters"]
    hidden = hidden_characters(original)
    if hidden:
        return [
            "original_name: must not contain invisible or direction-changing "
            f"characters ({', '.join(hidden)})"
        ]
    return []


def clean_reason(reason: Any) -> str:
    """The change reason as stored: text of at most ``MAX_REASON_CHARS``
    characters, stripped; anything else is a ValidationError naming ``reason``."""
    if reason is None:
        return ""
    if not isinstance(reason, str):
        raise ValidationError({"reason": ["reason: must be a string"]})
    reason = reason.replace("\r\n", "\n").strip()
    if len(reason) > MAX_REASON_CHARS:
        raise ValidationError(
            {"reason": [f"reason: must be at most {MAX_REASON_CHARS} characters"]}
        )
    if hidden_characters(reason.replace("\n", " ").replace("\t", " ")):
        raise ValidationError(
            {"reason": ["reason: must not contain invisible or control characters"]}
        )
    return reason


def lock_catalog(catalog_id: int) -> None:
    """Lock the catalog row before reading its names, so two writers cannot both
    add one of a confusable pair (every tool write takes this lock anyway, later,
    when it bumps the catalog version)."""
    Catalog.objects.select_for_update().filter(pk=catalog_id).values("pk").get()


def wanted_names(spec: ToolSpec, tool: Tool | None) -> dict[str, str]:
    """The names ``spec`` gives ``tool`` that it does not hold yet (every one
    for a new tool): each must be free (``catalog.names.refuse``)."""
    held = names.texts(tool) if tool is not None else {}
    given = names.texts(spec)
    return {field: text for field, text in given.items() if held.get(field) != text}


def _provider_name(catalog_id: int, spec: ToolSpec, tool: Tool | None) -> str:
    """The given provider name (already refused if taken), the tool's own when
    its name stays, else one made from the name that no other tool holds."""
    if spec.provider_name:
        return spec.provider_name
    if tool is not None and tool.provider_name and tool.name == spec.name:
        return tool.provider_name
    exclude = tool.pk if tool is not None else None
    return names.free_provider_name(catalog_id, spec.name, exclude=exclude)


# Every column _apply sets, plus the version and editor: what an update saves.
_UPDATED_FIELDS = [
    *_SPEC_FIELDS,
    "name",
    "provider_name",
    "prompt_tokens",
    "content_hash",
    "embedding_status",
    "embedding_error",
    "version",
    "updated_by",
    "updated",
]


def _apply(tool: Tool, spec: ToolSpec, provider_name: str) -> None:
    for name in _SPEC_FIELDS:
        setattr(tool, name, getattr(spec, name))
    tool.name = spec.name
    tool.provider_name = provider_name
    tool.prompt_tokens = estimate_prompt_tokens(spec)
    tool.content_hash = content_hash(spec)
    tool.embedding_status = EmbeddingStatus.PENDING
    tool.embedding_error = ""


def _enqueue_embedding(tool_id: int) -> None:
    work.enqueue_embedding(tool_id)


def create_tool(
    catalog: Catalog,
    spec: ToolSpec,
    *,
    actor: Actor,
    request_id: uuid.UUID | None = None,
    reason: str = "",
    screen: holds.Screen | None = None,
    origin: str = "edit",
) -> Tool:
    """Register a new tool; a taken name is a ToolConflict, a bad schema a
    ValidationError (a name confusable with another tool's included); nothing is
    written in either case. A definition the screening flags is written held,
    for review (``holds.screen_written``; ``origin`` names the write path)."""
    reason = clean_reason(reason)
    holds.refuse_held_status(spec)
    errors = spec_errors(spec)
    with transaction.atomic():
        lock_catalog(catalog.pk)
        names.refuse(catalog.pk, wanted_names(spec, None), errors)
        tool = Tool(
            catalog=catalog,
            created_by=stored_user(actor),
            updated_by=stored_user(actor),
        )
        _apply(tool, spec, _provider_name(catalog.pk, spec, None))
        tool.full_clean(
            exclude=_SET_BY_SERVICE, validate_unique=False, validate_constraints=False
        )
        tool.save()
        names.hold(tool)
        after = spec_json(tool)
        _record(tool, ChangeAction.CREATE, None, after, actor, request_id, reason)
        holds.screen_written(
            tool, actor=actor, request_id=request_id, screen=screen, origin=origin
        )
        _enqueue_embedding(tool.pk)
    return tool


def update_tool(
    tool: Tool,
    spec: ToolSpec,
    *,
    actor: Actor,
    request_id: uuid.UUID | None = None,
    reason: str = "",
    screen: holds.Screen | None = None,
    origin: str = "edit",
) -> WriteResult:
    """Replace a tool's definition; an identical definition changes nothing. A
    rename must keep the name rules (characters, not confusable). The new
    definition is screened as ``create_tool``'s; a held tool stays held."""
    reason = clean_reason(reason)
    with transaction.atomic():
        tool = Tool.objects.select_for_update().get(pk=tool.pk)
        spec, returns = holds.keep_hold(tool, spec)
        if returns:
            holds.returns_to(tool, returns, actor=actor, request_id=request_id)
        errors = spec_errors(spec, new_name=spec.name != tool.name)
        wanted = wanted_names(spec, tool)
        if wanted:
            lock_catalog(tool.catalog_id)
            names.refuse(tool.catalog_id, wanted, errors, exclude=tool.pk)
        elif errors:
            raise ValidationError(errors)
        if content_hash(spec) == tool.content_hash and (
            not spec.provider_name or spec.provider_name == tool.provider_name
        ):
            return WriteResult(tool, ImportOutcome.UNCHANGED)
        before, held = spec_json(tool), names.texts(tool)
        _apply(tool, spec, _provider_name(tool.catalog_id, spec, tool))
        tool.version += 1
        tool.updated_by = stored_user(actor)
        tool.full_clean(
            exclude=_SET_BY_SERVICE, validate_unique=False, validate_constraints=False
        )
        tool.save(update_fields=_UPDATED_FIELDS)
        names.hold(tool, held)
        after = spec_json(tool)
        _record(tool, ChangeAction.UPDATE, before, after, actor, request_id, reason)
        holds.screen_written(
            tool, actor=actor, request_id=request_id, screen=screen, origin=origin
        )
        _enqueue_embedding(tool.pk)
    return WriteResult(tool, ImportOutcome.UPDATED)


def set_tool_status(
    tool: Tool,
    status: str,
    *,
    actor: Actor,
    request_id: uuid.UUID | None = None,
    reason: str = "",
) -> WriteResult:
    """Change only the status (active, disabled, deprecated) of a tool.

    The schema is not checked again: a curator must always be able to disable a
    tool, even one whose stored schema a stricter policy would now refuse. A
    tool held for review keeps ``held`` until its review is decided (the
    status asked for is where it returns then)."""
    if status not in ToolStatus.values:
        raise ValidationError(
            {"status": [f"status: must be one of {ToolStatus.values}"]}
        )
    reason = clean_reason(reason)
    with transaction.atomic():
        tool = Tool.objects.select_for_update().get(pk=tool.pk)
        if holds.returns_to(tool, status, actor=actor, request_id=request_id):
            return WriteResult(tool, ImportOutcome.UPDATED)
        if tool.status == status:
            return WriteResult(tool, ImportOutcome.UNCHANGED)
        tool = write_status(
            tool, status, actor=actor, request_id=request_id, reason=reason
        )
    return WriteResult(tool, ImportOutcome.UPDATED)


def delete_tool(
    tool: Tool,
    *,
    actor: Actor,
    request_id: uuid.UUID | None = None,
    reason: str = "",
) -> None:
    """Delete a tool; its change history stays."""
    reason = clean_reason(reason)
    with transaction.atomic():
        tool = Tool.objects.select_for_update().get(pk=tool.pk)
        tool.version += 1
        before = spec_json(tool)
        _record(tool, ChangeAction.DELETE, before, None, actor, request_id, reason)
        holds.withdraw_all(tool, actor=actor, request_id=request_id)
        held, catalog_id = names.texts(tool), tool.catalog_id
        tool.delete()
        names.settle(catalog_id, looks_of(*held.values()))
