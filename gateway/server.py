"""The MCP server: three tools, ``search_tools``, ``get_tool_details`` and
``call_tool``, over streamable HTTP (stateless, JSON answers), for the 2026-07-28
protocol and the handshake-era clients alike (the SDK serves both). A
``tools/call`` of any other name is a call of the catalog tool of that name, as
``call_tool`` would make it (``_meta.approval_id`` carries an approval); a name
that is no tool the key could be offered is the specification's unknown-tool
error (JSON-RPC -32602), its refused call on record as the call path wrote it.

The caller was authenticated before any MCP work (``gateway.wsgi``), which puts
it in the ASGI scope's state, with any problem the body's check found in a tool's
arguments (``gateway.inbound``: answered here, as that tool's refusal); the
handlers run the Django work off the shared loop (``_in_thread``). No
exception's text reaches the caller: a refusal names the field and the rule,
anything else is logged."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS

from calls.answers import NEEDS_AUTHORIZATION, with_absolute_link
from config.aio import outside_loop
from gateway import listing, services
from gateway.inbound import Problem

log = logging.getLogger(__name__)
T = TypeVar("T")
META_TOOLS = frozenset({"search_tools", "get_tool_details", "call_tool"})
CALLER = "quiver_caller"  # scope["state"] keys set by gateway.wsgi
REQUEST_ID = "quiver_request_id"
PROBLEM = "quiver_problem"
INLINE = "quiver_inline"  # the request has a loop of its own: work in place
RECORDED = "quiver_recorded"  # the JSON-RPC error answered is on record already

TOOLS = [
    types.Tool(
        name="search_tools",
        title="Search tools",
        description=(
            "Find the few tools that fit a task among all the tools this key may "
            "use. Give query (text) or messages (the chat). Answers the tools as "
            "MCP Tool objects, best first, each with score and reason."
        ),
        input_schema={
            "type": "object",
            "properties": services.SEARCH_ARGUMENTS,
            "additionalProperties": False,
        },
        annotations=types.ToolAnnotations(
            read_only_hint=True,
            destructive_hint=False,
            idempotent_hint=False,  # each search is an audit record
            open_world_hint=False,
        ),
    ),
    types.Tool(
        name="get_tool_details",
        title="Get tool details",
        description=(
            "The full definitions (MCP Tool objects) of tools by name; names this "
            "key may not use are listed in not_found."
        ),
        input_schema={
            "type": "object",
            "properties": services.DETAILS_ARGUMENTS,
            "required": ["names"],
            "additionalProperties": False,
        },
        annotations=types.ToolAnnotations(
            read_only_hint=True,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        ),
    ),
    types.Tool(
        name="call_tool",
        title="Call a tool",
        description=(
            "Run a tool search_tools found: its name and arguments. Quiver checks "
            "access and the arguments, asks a person when the tool needs approval "
            "(then answers status pending_approval with an approval_id: send the "
            "same call again with approval_id once approved), calls the tool's "
            "server and answers its result as it was."
        ),
        input_schema={
            "type": "object",
            "properties": services.CALL_ARGUMENTS,
            "required": ["name"],
            "additionalProperties": False,
        },
        annotations=types.ToolAnnotations(
            read_only_hint=False,
            destructive_hint=True,  # it runs whatever tool it is given
            idempotent_hint=False,
            open_world_hint=True,
        ),
    ),
]


SCHEMAS: dict[str, Mapping[str, Any]] = {tool.name: tool.input_schema for tool in TOOLS}


def tool_input_schema(name: str) -> Mapping[str, Any] | None:
    """A tool's input schema for the SDK's ``Mcp-Param-*`` header check on
    2026-07-28 requests: what ``tools/list`` without a cursor answers (the three
    tools; None for a catalog tool called by its own name, which that listing
    never shows). Without it the SDK runs the ``tools/list`` handler on every
    ``tools/call`` with arguments to find the schema: a listing built and
    serialized per call, for nothing."""
    return SCHEMAS.get(name)


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    """The same three tools for every key, in this order, and no next cursor;
    with a search's ``list_cursor``, the tools it found (``gateway.listing``)."""
    cursor = getattr(params, "cursor", None)
    if not cursor:
        return types.ListToolsResult(tools=TOOLS)
    user, request_id, _ = _caller(ctx)
    try:
        found = await _in_thread(
            ctx, listing.found_page, user, cursor, services.mcp_tool
        )
    except listing.BadCursor as exc:
        raise MCPError(INVALID_PARAMS, str(exc)) from exc
    except Exception as exc:  # no exception's text reaches the caller
        log.exception("MCP tools/list failed (request %s)", request_id)
        raise MCPError(INTERNAL_ERROR, services.FAILED.format(request_id)) from exc
    return types.ListToolsResult.model_validate({"tools": found})


async def call_tool(
    ctx: Any, params: types.CallToolRequestParams
) -> types.CallToolResult:
    user, request_id, problem = _caller(ctx)
    name = params.name
    direct = name not in META_TOOLS  # a catalog tool, called by its own name
    arguments = dict(params.arguments or {})
    if not direct and problem is not None:
        # A meta-tool's own arguments are named as the tool takes them.
        problem = Problem(problem.field.removeprefix("arguments."), problem.rule)
    if direct:
        arguments = {"name": name, "arguments": arguments}
        approval = (params.meta or {}).get("approval_id")
        arguments |= {} if approval is None else {"approval_id": approval}
    work = (user, arguments, request_id, problem)
    try:
        if name == "search_tools":
            found = await _in_thread(ctx, services.search, *work)
            return _found(found, _search_text(found))
        if name == "get_tool_details":
            found = await _in_thread(ctx, services.details, *work)
            return _found(found, json.dumps(found, indent=1))
        answer = await _in_thread(ctx, services.call, *work, direct)
    except services.UnknownTool as exc:  # recorded as the gateway's refusal
        _state(ctx)[RECORDED] = True
        raise MCPError(INVALID_PARAMS, str(exc), {"field": exc.field}) from exc
    except services.ToolFailure as exc:
        return _error(str(exc))
    except Exception:
        log.exception("MCP tools/call failed (request %s)", request_id)
        return _error(services.FAILED.format(request_id))
    if direct and answer.outcome == "refused" and answer.status == 404:
        raise _unknown_tool(ctx, answer)
    return _call_result(_linked(ctx, answer), direct=direct)


def _unknown_tool(ctx: Any, answer: services.CallAnswer) -> MCPError:
    """A direct call of a name that is no tool the key could be offered (a
    made-up name and a hidden tool alike): the specification's unknown-tool
    error, not a tool result. The call path wrote its refused row already, so
    the gateway writes none for the error."""
    _state(ctx)[RECORDED] = True
    data = {"field": answer.refused_field, "call_id": answer.call_id}
    return MCPError(INVALID_PARAMS, answer.reason, data)


def _found(found: dict[str, Any], text: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=text)], structured_content=found
    )


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def _call_result(
    answer: services.CallAnswer, *, direct: bool = False
) -> types.CallToolResult:
    """The upstream's result as it was when it was tried; otherwise an error
    result the model cannot take for done (pending: status pending_approval,
    with a text saying plainly what to do; ``direct``: the tool was called by its
    own name, so the approval goes back in ``_meta``)."""
    meta: dict[str, Any] = {
        "quiver/outcome": answer.outcome,
        "quiver/call_id": answer.call_id,
    }
    if answer.screening:  # which parts were redacted, flagged or withheld, why
        meta["quiver/screening"] = answer.screening
    # An upstream's answer may hold no content block (structured content alone):
    # ``content`` is None only when no answer came back.
    if answer.outcome in ("ran", "failed", "timed_out") and answer.content is not None:
        found = {
            "content": answer.content,
            "structuredContent": answer.structured_content,
            "isError": answer.is_error,
        }
        return types.CallToolResult.model_validate({**found, "_meta": meta})
    text = answer.reason + (f"; {answer.hint}" if answer.hint else "")
    if answer.outcome == NEEDS_AUTHORIZATION:
        text = needs_authorization_text(answer)
    if answer.outcome == "pending" and answer.approval_id:
        # "pending_approval <id>: ...": a model that reads only text (most
        # frameworks' default) needs the id to send the call again; the rest
        # says plainly that a person must approve it and how to re-send it.
        text = f"pending_approval {answer.approval_id}: " + pending_text(
            answer, direct=direct
        )
    structured = answer.structured_content or {
        "status": answer.outcome,
        "reason": answer.reason,
        "call_id": answer.call_id,
        **({"errors": answer.errors, "hint": answer.hint} if answer.errors else {}),
        **({"approval_id": answer.approval_id} if answer.approval_id else {}),
        **(
            {"authorization_url": answer.authorization_url or None}
            if answer.outcome == NEEDS_AUTHORIZATION
            else {}
        ),
    }
    return types.CallToolResult(
        content=[types.TextContent(text=text)],
        structured_content=structured,
        is_error=True,
        _meta=meta,
    )


def _linked(ctx: Any, answer: services.CallAnswer) -> services.CallAnswer:
    """The connect link of a call that needs authorization, absolute on the
    address the caller reached (when ``QUIVER_PUBLIC_URL`` did not make it so)."""
    request = getattr(ctx, "request", None)
    if request is None or not answer.authorization_url:
        return answer
    return with_absolute_link(answer, str(request.base_url))


def needs_authorization_text(answer: services.CallAnswer) -> str:
    """What the model reads when the call needs the person's own account: that
    nothing ran, and where the person connects it."""
    where = (
        f" The person connects it at {answer.authorization_url} (tell the user "
        "to open that link), then the same call can be sent again."
        if answer.authorization_url
        else ""
    )
    return (
        f"needs_authorization: Not run. {answer.reason}.{where} Nothing has "
        "happened yet, so do not report the action as done."
    )


def pending_text(answer: services.CallAnswer, *, direct: bool) -> str:
    """What the model reads when a call waits for a person: that nothing ran,
    that a person must approve it, and exactly how to send it again."""
    approval = answer.approval_id
    expires = (answer.structured_content or {}).get("expires")
    until = f" until {expires}" if expires else ""
    if direct:
        again = (
            f"send the same tools/call of {answer.tool} with the same arguments "
            f'and _meta {{"approval_id": "{approval}"}}'
        )
    else:
        again = (
            f"call call_tool again with the same name and arguments and "
            f'"approval_id": "{approval}"'
        )
    return (
        f"Not run: a person must approve this call of {answer.tool} before it "
        f"runs. Approval {approval} is waiting for a person{until}. Nothing has "
        "happened yet, so do not report the action as done; tell the user it "
        f"waits for approval. Once a person approves it, {again}. Changing the "
        "tool or any argument needs a new approval. If a person denies it, the "
        "call never runs and the re-sent call answers why."
    )


async def _in_thread(ctx: Any, work: Callable[..., T], *args: Any) -> T:
    """``work(*args)``, Django's synchronous work, off the shared gateway loop: in
    a worker thread, or in place when the request runs on a loop of its own
    (``INLINE``: its thread waits for this answer and serves nothing else)."""
    if _state(ctx).get(INLINE):
        return outside_loop(work, *args)
    return await anyio.to_thread.run_sync(work, *args)


def _state(ctx: Any) -> dict[str, Any]:
    request = getattr(ctx, "request", None)
    return request.scope.get("state", {}) if request is not None else {}


def _caller(ctx: Any) -> tuple[Any, uuid.UUID, Problem | None]:
    """The authenticated caller, the request's id and a problem found in the
    body; no caller here is a wiring fault, never a guest."""
    state = _state(ctx)
    if CALLER not in state:
        raise RuntimeError("MCP request without an authenticated caller")
    return state[CALLER], state[REQUEST_ID], state.get(PROBLEM)


def _search_text(found: dict[str, Any]) -> str:
    """What a model that reads only text needs: each tool's name, why, what it
    does and its arguments (as its input schema), and how to call it."""
    lines = [f"selection {found['selection_id']} in catalog {found['catalog']}:"]
    if found.get("words_only_reason"):
        lines.append(found["words_only_reason"])
    for tool in found["tools"]:
        lines.append(f"- {tool['name']} ({tool['score']:.3f}): {tool['reason']}")
        lines.append(f"  {tool.get('description', '')}")
        schema = json.dumps(tool.get("inputSchema", {}), separators=(",", ":"))
        lines.append(f"  arguments: {schema}")
    if not found["tools"]:
        lines.append("(no tool fits; try other words)")
    else:
        lines.append(
            "Call one with call_tool {name, arguments, selection_id}, or by its name."
        )
    return "\n".join(lines)


def build_manager() -> StreamableHTTPSessionManager:
    """A stateless, JSON-answering session manager. Host and Origin are checked
    before it (gateway.wsgi, against ALLOWED_HOSTS), so its own check is off."""
    server: Server[Any] = Server(
        "quiver",
        version="1",
        get_tool_input_schema=tool_input_schema,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    return StreamableHTTPSessionManager(
        app=server,
        json_response=True,
        stateless=True,
        security_settings=TransportSecuritySettings(
            enable_dns_rebinding_protection=False
        ),
    )
