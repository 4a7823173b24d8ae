"""``Quiver``: the REST API over httpx, with retries of the answers the server
marks retryable, timeouts, and the providers' tool search adapters."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import httpx

from quiver_client import adapters
from quiver_client.base import ClientBase
from quiver_client.errors import APIError
from quiver_client.types import (
    Approval,
    BatchError,
    Selection,
    ToolCallResult,
    ToolCallsValidation,
)
from quiver_client.waiting import Waiter
from quiver_client.wire import (
    RetryPolicy,
    api_base_url,
    call_answer,
    call_body,
    export_params,
    offered_names,
    plain_output,
    request_headers,
    search_options,
    select_body,
    validate_body,
)


class Quiver(ClientBase):
    """A blocking client: ``Quiver("http://127.0.0.1:8000", key="...")``.

    ``timeout`` is httpx's (seconds, or an ``httpx.Timeout``); ``retry`` says how
    the answers the server marks retryable are retried. ``transport``,
    ``headers`` and ``sleep`` are for tests and proxies. Use it as a context
    manager, or call ``close()``.
    """

    def __init__(
        self,
        url: str,
        key: str | None = None,
        *,
        timeout: float | httpx.Timeout = 30.0,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
        headers: Mapping[str, str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__(url, key, timeout=timeout, retry=retry)
        self._sleep = sleep
        self._http = httpx.Client(
            base_url=api_base_url(url),
            headers=request_headers(key, headers),
            timeout=timeout,
            transport=transport,
        )

    def __enter__(self) -> Quiver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
    ) -> Any:
        """One API call (``path`` under ``/api/v1/``), retried when the server
        marks its answer retryable; the decoded JSON answer, or an ``APIError``."""
        attempt = 0
        while True:
            try:
                response = self._http.request(method, path, json=json, params=params)
            except httpx.HTTPError as exc:
                wait, answer = self._settle(attempt, f"{method} {path}", None, exc)
            else:
                wait, answer = self._settle(attempt, f"{method} {path}", response, None)
            if wait is None:
                return answer
            self._sleep(wait)
            attempt += 1

    # The API ------------------------------------------------------------------------

    def select(
        self,
        query: Any = None,
        *,
        messages: Sequence[Mapping[str, Any]] | None = None,
        **options: Any,
    ) -> Selection:
        """``POST /api/v1/select``: ``query`` (text or an object) or chat
        ``messages``, and any of the API's options (``catalog``,
        ``max_candidates``, ``format``, ``roles``, ``explain``...)."""
        body = select_body(query, messages, options)
        return cast(Selection, self.request("POST", "select", json=body))

    def select_batch(
        self, requests: Sequence[Mapping[str, Any]]
    ) -> list[Selection | BatchError]:
        """``POST /api/v1/select/batch``: one answer or error object per request,
        in order (a ``BatchError`` has ``error``; an answer ``selection_id``)."""
        body = {"requests": [dict(r) for r in requests]}
        answer = self.request("POST", "select/batch", json=body)
        return cast(list[Selection | BatchError], answer["results"])

    def validate_tool_calls(
        self,
        output: Any,
        selection_id: str | None = None,
        format: str | None = None,
        *,
        catalog: str | None = None,
    ) -> ToolCallsValidation:
        """``POST /api/v1/tool-calls/validate``: the model's output as the provider
        returned it (a dict, or an SDK object with ``model_dump``)."""
        body = validate_body(plain_output(output), selection_id, format, catalog)
        return cast(
            ToolCallsValidation, self.request("POST", "tool-calls/validate", json=body)
        )

    def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        catalog: str | None = None,
        selection_id: str | None = None,
        approval_id: str | None = None,
    ) -> ToolCallResult:
        """``POST /api/v1/tool-calls/execute``: run the tool through Quiver. A
        result when its server was tried (check ``outcome`` and ``is_error``);
        ``PendingApproval`` when a person must approve it first (call again
        with ``approval_id``); ``NeedsAuthorization`` when the tool's server
        acts for each person and theirs is not connected (its
        ``authorization_url`` is where they connect it); a refusal raises the
        API's error (400 bad arguments, 403 not allowed or denied, 404
        unknown, 409 no source or an approval that does not cover the call)."""
        body = call_body(name, arguments, catalog, selection_id, approval_id)
        return call_answer(self.request("POST", "tool-calls/execute", json=body))

    def wait_for_approval(
        self,
        approval_id: Any,
        *,
        timeout: float | None = 600.0,
        interval: float = 1.0,
        max_interval: float = 15.0,
    ) -> Approval:
        """Wait for a person to decide a pending call's approval (its id, or the
        ``PendingApproval`` raised by ``call``): polls ``GET
        /api/v1/approvals/{id}`` with a growing wait (``interval`` to
        ``max_interval`` seconds, at least a 429's ``Retry-After``) and returns
        the approval once its ``status`` is ``approved``, ``denied``,
        ``expired`` or ``used``. ``ApprovalTimeout`` after ``timeout`` seconds
        (None: until it is decided or expires)."""
        waiter = Waiter(
            approval_id, timeout=timeout, interval=interval, max_interval=max_interval
        )
        while True:
            try:
                response = self._http.get(waiter.path)
            except httpx.HTTPError as exc:
                found, wait = waiter.settle(None, exc)
            else:
                found, wait = waiter.settle(response, None)
            if found is not None:
                return found
            assert wait is not None
            self._sleep(wait)

    def list_tools(self, **filters: Any) -> list[dict[str, Any]]:
        """``GET /api/v1/tools/``, every page: the tools this key can read."""
        tools: list[dict[str, Any]] = []
        page = 1
        while True:
            params = {**filters, "page": page}
            answer = self.request("GET", "tools/", params=params)
            tools.extend(answer["results"])
            if not answer.get("next"):
                return tools
            page += 1

    # Anthropic ----------------------------------------------------------------------

    def anthropic_tools(self, catalog: str | None = None) -> list[Any]:
        """The Messages API ``tools``: every active tool this key may read in the
        catalog, as Quiver renders it for Anthropic, with ``defer_loading: true``,
        then the non-deferred ``search_tools`` client tool."""
        path, params = export_params(catalog)
        tools = adapters.anthropic_tools_list(self.request("GET", path, params=params))
        self._remember(catalog, tools)
        return tools

    def anthropic_tool_result(
        self,
        tool_use_block: Any,
        catalog: str | None = None,
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        **options: Any,
    ) -> dict[str, Any]:
        """Answer the model's ``search_tools`` call: a ``tool_result`` of
        ``tool_reference`` blocks for the selected tools, naming only tools of
        the list the model was given (``tools``, else this client's last
        ``anthropic_tools(catalog)``, fetched now if there was none). ``options``
        go to ``select``. A bad query is an ``is_error`` result the model can
        correct; other errors raise."""
        use_id = str(adapters.field(tool_use_block, "id"))
        try:
            query, limit = adapters.search_arguments(
                adapters.field(tool_use_block, "input")
            )
            opts = search_options(catalog, limit, "anthropic", options)
            answer = self.select(query, **opts)
        except adapters.SearchArgumentsError as exc:
            return adapters.anthropic_text_result(use_id, str(exc), is_error=True)
        except APIError as exc:
            if exc.status_code != 400:
                raise
            return adapters.anthropic_text_result(use_id, exc.detail, is_error=True)
        names = [pick["definition"]["name"] for pick in answer["tools"]]
        offered = self._known_offer(catalog, tools)
        if offered is None:
            offered = offered_names(self.anthropic_tools(catalog))
        return adapters.anthropic_result(use_id, names, offered)

    # OpenAI -------------------------------------------------------------------------

    def openai_tool_search(self, description: str | None = None) -> dict[str, Any]:
        """The Responses API ``tool_search`` declaration (``execution: client``)."""
        if description is None:
            return adapters.openai_tool_search_declaration()
        return adapters.openai_tool_search_declaration(description)

    def openai_tool_search_output(
        self, item: Any, catalog: str | None = None, **options: Any
    ) -> dict[str, Any]:
        """Answer a ``tool_search_call`` item with a ``tool_search_output`` item
        carrying the selected tools' full function definitions."""
        query, limit = adapters.search_arguments(adapters.field(item, "arguments"))
        opts = search_options(catalog, limit, "openai-responses", options)
        answer = self.select(query, **opts)
        call_id = str(adapters.field(item, "call_id"))
        return adapters.openai_output(
            call_id, [pick["definition"] for pick in answer["tools"]]
        )
