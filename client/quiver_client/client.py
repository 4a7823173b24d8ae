"""``Quiver`` and ``AsyncQuiver``: the REST API over httpx, with retries of the
answers the server marks retryable, timeouts, and the providers' tool search
adapters."""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import httpx

from quiver_client import adapters
from quiver_client.errors import (
    APIError,
    PendingApproval,
    QuiverConnectionError,
    QuiverTimeout,
    error_class,
)
from quiver_client.types import (
    Approval,
    BatchError,
    Selection,
    ToolCallResult,
    ToolCallsValidation,
)
from quiver_client.waiting import Waiter

API = "/api/v1/"
DEFAULT_CATALOG = "default"
USER_AGENT = "quiver-client/0.1"


@dataclass(frozen=True)
class RetryPolicy:
    """Retries of an answer the server marks ``"retryable": true`` (a limit or an
    outage met before anything was done: nothing ran) and of a connection that
    never opened. Nothing else is sent again: not a 503 without the mark, and
    never a tool call whose tool may have run (the server answers that
    ``"retryable": false``, without ``Retry-After``).

    The wait is the server's ``Retry-After`` when it sends one, else
    ``backoff * 2**attempt`` (at most ``max_backoff``) plus up to 10% jitter. A
    ``Retry-After`` longer than ``max_wait`` is not waited for: the error is
    raised at once, carrying ``retry_after``.
    """

    max_retries: int = 3
    backoff: float = 0.5
    max_backoff: float = 8.0
    max_wait: float = 60.0

    def delay(self, attempt: int, retry_after: float | None) -> float | None:
        """Seconds to wait before retry ``attempt`` (0-based), None to give up."""
        if attempt >= self.max_retries:
            return None
        if retry_after is not None:
            return retry_after if retry_after <= self.max_wait else None
        wait = min(self.max_backoff, self.backoff * 2**attempt)
        return wait * (1 + random.random() / 10)


def parse_retry_after(value: str | None) -> float | None:
    """``Retry-After`` as seconds: a number, or an HTTP date from now."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def api_error(response: httpx.Response) -> APIError:
    """The exception for an error answer, from the API's envelope when it has one."""
    try:
        body: Any = response.json()
    except ValueError:
        body = None
    envelope = body if isinstance(body, dict) else {}
    error = envelope.get("error")
    detail = envelope.get("detail")
    fields = envelope.get("fields")
    cls = error_class(response.status_code, str(error) if error else None)
    return cls(
        response.status_code,
        str(error) if error else f"http_{response.status_code}",
        str(detail) if detail else (response.reason_phrase or ""),
        fields if isinstance(fields, dict) else {},
        retry_after=parse_retry_after(response.headers.get("Retry-After")),
        request_id=response.headers.get("X-Request-ID"),
        body=body,
        retryable=envelope.get("retryable") is True,
    )


def select_body(
    query: Any, messages: Sequence[Mapping[str, Any]] | None, options: dict[str, Any]
) -> dict[str, Any]:
    """The body of ``POST select``: exactly one of ``query`` and ``messages``."""
    if (query is None) == (messages is None):
        raise TypeError("select: give exactly one of query or messages")
    body = {k: v for k, v in options.items() if v is not None}
    if query is not None:
        body["query"] = query
    else:
        body["messages"] = [dict(m) for m in messages or ()]
    return body


def validate_body(
    output: Any, selection_id: str | None, format: str | None, catalog: str | None
) -> dict[str, Any]:
    body: dict[str, Any] = {"output": output}
    for key, value in (
        ("selection_id", selection_id),
        ("format", format),
        ("catalog", catalog),
    ):
        if value is not None:
            body[key] = str(value)
    return body


def call_body(
    name: str,
    arguments: Mapping[str, Any] | None,
    catalog: str | None,
    selection_id: str | None,
    approval_id: str | None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "arguments": dict(arguments or {})}
    for key, value in (
        ("catalog", catalog),
        ("selection_id", selection_id),
        ("approval_id", approval_id),
    ):
        if value is not None:
            body[key] = str(value)
    return body


def call_answer(answer: Any) -> ToolCallResult:
    """The typed result, or ``PendingApproval`` when a person must approve."""
    if isinstance(answer, dict) and answer.get("status") == "pending_approval":
        raise PendingApproval(answer)
    return cast(ToolCallResult, answer)


def export_params(catalog: str | None) -> tuple[str, dict[str, str]]:
    slug = catalog or DEFAULT_CATALOG
    return f"catalogs/{slug}/export", {"format": "anthropic", "status": "active"}


def search_options(
    catalog: str | None, limit: int, fmt: str, options: dict[str, Any]
) -> dict[str, Any]:
    return {**options, "catalog": catalog, "max_candidates": limit, "format": fmt}


def _headers(key: str | None, headers: Mapping[str, str] | None) -> dict[str, str]:
    result = {"User-Agent": USER_AGENT, "Accept": "application/json"}
    if key:
        result["Authorization"] = f"Bearer {key}"
    result.update(headers or {})
    return result


def _base_url(url: str) -> str:
    return url.rstrip("/") + API


class _Base:
    """What both clients share: settings and the names offered per catalog."""

    def __init__(
        self,
        url: str,
        key: str | None,
        *,
        timeout: float | httpx.Timeout,
        retry: RetryPolicy | None,
    ) -> None:
        self.url = url.rstrip("/")
        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        self._key = key
        # Anthropic names offered per catalog slug, from the last anthropic_tools().
        self._offered: dict[str, frozenset[str]] = {}

    def _settle(
        self,
        attempt: int,
        call: str,
        response: httpx.Response | None,
        failure: httpx.HTTPError | None,
    ) -> tuple[float | None, Any]:
        """After one attempt of ``call``: ``(seconds, None)`` to wait and try again,
        or ``(None, answer)`` with the decoded JSON answer; raises the error to
        give up with. A connection not made (refused, or its connect timed out)
        and an answer the server marks retryable are retried as ``retry``
        allows; any other answer, timeout or transport failure is not (the
        request may have run)."""
        if failure is not None:
            if isinstance(failure, httpx.ConnectTimeout | httpx.ConnectError):
                wait = self.retry.delay(attempt, None)
                if wait is not None:
                    return wait, None
            if isinstance(failure, httpx.TimeoutException):
                raise QuiverTimeout(f"{call}: {failure}") from failure
            raise QuiverConnectionError(f"{call}: {failure}") from failure
        assert response is not None
        if response.status_code < 400:
            return None, (response.json() if response.content else None)
        error = api_error(response)
        if error.retryable:
            wait = self.retry.delay(attempt, error.retry_after)
            if wait is not None:
                return wait, None
        raise error

    def _remember(self, catalog: str | None, tools: list[Any]) -> None:
        self._offered[catalog or DEFAULT_CATALOG] = offered_names(tools)

    def _known_offer(
        self, catalog: str | None, tools: Sequence[Mapping[str, Any]] | None
    ) -> frozenset[str] | None:
        """The names the model was given: ``tools`` when the caller passes the
        list it sent, else the last ``anthropic_tools(catalog)`` of this client
        (never refreshed behind the caller's back: a tool added since is not in
        the request the model answers)."""
        if tools is not None:
            return offered_names(tools)
        return self._offered.get(catalog or DEFAULT_CATALOG)


def offered_names(tools: Sequence[Mapping[str, Any]]) -> frozenset[str]:
    """The deferred tools' names of an ``anthropic_tools()`` list."""
    return frozenset(str(t["name"]) for t in tools if t.get("defer_loading"))


class Quiver(_Base):
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
            base_url=_base_url(url),
            headers=_headers(key, headers),
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
        body = validate_body(_plain(output), selection_id, format, catalog)
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


def _plain(output: Any) -> Any:
    """A provider SDK object as plain JSON (its ``model_dump``), else itself."""
    dump = getattr(output, "model_dump", None)
    if callable(dump):
        return dump(mode="json", exclude_none=True)
    if isinstance(output, list):
        return [_plain(item) for item in output]
    return output


class AsyncQuiver(_Base):
    """The asyncio twin of ``Quiver``: the same methods, awaited."""

    def __init__(
        self,
        url: str,
        key: str | None = None,
        *,
        timeout: float | httpx.Timeout = 30.0,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        headers: Mapping[str, str] | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        super().__init__(url, key, timeout=timeout, retry=retry)
        self._sleep = sleep
        self._http = httpx.AsyncClient(
            base_url=_base_url(url),
            headers=_headers(key, headers),
            timeout=timeout,
            transport=transport,
        )

    async def __aenter__(self) -> AsyncQuiver:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
    ) -> Any:
        """See ``Quiver.request``."""
        attempt = 0
        while True:
            try:
                response = await self._http.request(
                    method, path, json=json, params=params
                )
            except httpx.HTTPError as exc:
                wait, answer = self._settle(attempt, f"{method} {path}", None, exc)
            else:
                wait, answer = self._settle(attempt, f"{method} {path}", response, None)
            if wait is None:
                return answer
            await self._sleep(wait)
            attempt += 1

    async def select(
        self,
        query: Any = None,
        *,
        messages: Sequence[Mapping[str, Any]] | None = None,
        **options: Any,
    ) -> Selection:
        """See ``Quiver.select``."""
        body = select_body(query, messages, options)
        return cast(Selection, await self.request("POST", "select", json=body))

    async def select_batch(
        self, requests: Sequence[Mapping[str, Any]]
    ) -> list[Selection | BatchError]:
        """See ``Quiver.select_batch``."""
        body = {"requests": [dict(r) for r in requests]}
        answer = await self.request("POST", "select/batch", json=body)
        return cast(list[Selection | BatchError], answer["results"])

    async def validate_tool_calls(
        self,
        output: Any,
        selection_id: str | None = None,
        format: str | None = None,
        *,
        catalog: str | None = None,
    ) -> ToolCallsValidation:
        """See ``Quiver.validate_tool_calls``."""
        body = validate_body(_plain(output), selection_id, format, catalog)
        answer = await self.request("POST", "tool-calls/validate", json=body)
        return cast(ToolCallsValidation, answer)

    async def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        catalog: str | None = None,
        selection_id: str | None = None,
        approval_id: str | None = None,
    ) -> ToolCallResult:
        """See ``Quiver.call``."""
        body = call_body(name, arguments, catalog, selection_id, approval_id)
        answer = await self.request("POST", "tool-calls/execute", json=body)
        return call_answer(answer)

    async def wait_for_approval(
        self,
        approval_id: Any,
        *,
        timeout: float | None = 600.0,
        interval: float = 1.0,
        max_interval: float = 15.0,
    ) -> Approval:
        """See ``Quiver.wait_for_approval``."""
        waiter = Waiter(
            approval_id, timeout=timeout, interval=interval, max_interval=max_interval
        )
        while True:
            try:
                response = await self._http.get(waiter.path)
            except httpx.HTTPError as exc:
                found, wait = waiter.settle(None, exc)
            else:
                found, wait = waiter.settle(response, None)
            if found is not None:
                return found
            assert wait is not None
            await self._sleep(wait)

    async def list_tools(self, **filters: Any) -> list[dict[str, Any]]:
        """See ``Quiver.list_tools``."""
        tools: list[dict[str, Any]] = []
        page = 1
        while True:
            answer = await self.request(
                "GET", "tools/", params={**filters, "page": page}
            )
            tools.extend(answer["results"])
            if not answer.get("next"):
                return tools
            page += 1

    async def anthropic_tools(self, catalog: str | None = None) -> list[Any]:
        """See ``Quiver.anthropic_tools``."""
        path, params = export_params(catalog)
        document = await self.request("GET", path, params=params)
        tools = adapters.anthropic_tools_list(document)
        self._remember(catalog, tools)
        return tools

    async def anthropic_tool_result(
        self,
        tool_use_block: Any,
        catalog: str | None = None,
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        **options: Any,
    ) -> dict[str, Any]:
        """See ``Quiver.anthropic_tool_result``."""
        use_id = str(adapters.field(tool_use_block, "id"))
        try:
            query, limit = adapters.search_arguments(
                adapters.field(tool_use_block, "input")
            )
            opts = search_options(catalog, limit, "anthropic", options)
            answer = await self.select(query, **opts)
        except adapters.SearchArgumentsError as exc:
            return adapters.anthropic_text_result(use_id, str(exc), is_error=True)
        except APIError as exc:
            if exc.status_code != 400:
                raise
            return adapters.anthropic_text_result(use_id, exc.detail, is_error=True)
        names = [pick["definition"]["name"] for pick in answer["tools"]]
        offered = self._known_offer(catalog, tools)
        if offered is None:
            offered = offered_names(await self.anthropic_tools(catalog))
        return adapters.anthropic_result(use_id, names, offered)

    def openai_tool_search(self, description: str | None = None) -> dict[str, Any]:
        """See ``Quiver.openai_tool_search``."""
        if description is None:
            return adapters.openai_tool_search_declaration()
        return adapters.openai_tool_search_declaration(description)

    async def openai_tool_search_output(
        self, item: Any, catalog: str | None = None, **options: Any
    ) -> dict[str, Any]:
        """See ``Quiver.openai_tool_search_output``."""
        query, limit = adapters.search_arguments(adapters.field(item, "arguments"))
        opts = search_options(catalog, limit, "openai-responses", options)
        answer = await self.select(query, **opts)
        call_id = str(adapters.field(item, "call_id"))
        return adapters.openai_output(
            call_id, [pick["definition"] for pick in answer["tools"]]
        )
