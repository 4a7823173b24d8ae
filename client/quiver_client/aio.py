"""``AsyncQuiver``: ``Quiver``'s twin for asyncio, over httpx's async client."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
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


class AsyncQuiver(ClientBase):
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
            base_url=api_base_url(url),
            headers=request_headers(key, headers),
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
        body = validate_body(plain_output(output), selection_id, format, catalog)
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
