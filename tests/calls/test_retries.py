"""Quiver retries a call only when the tool says it is idempotent, at most once,
after a connection failure; any other call reached the upstream once at most.

A TCP relay between Quiver and the real upstream breaks the connection of the
next ``tools/call`` after the upstream received it (its answer never comes
back): the case where a blind retry would run a destructive call twice."""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.utils import timezone

from calls.models import Approval
from catalog.models import Tool
from sources.models import Source
from tests.calls.conftest import link_source
from tests.upstream import Upstream

URL = "/api/v1/tool-calls/execute"
# The JSON-RPC body of a tools/call (its headers may name the method too).
CALL_BODY = re.compile(rb'"method":\s*"tools/call"')


class Relay:
    """Forwards TCP to the upstream; ``breaks`` tools/call exchanges are cut
    after the request went through, before the answer comes back."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.breaks = 0
        self.lock = threading.Lock()
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        upstream = socket.create_connection(("127.0.0.1", self.target_port))
        cut = threading.Event()
        threading.Thread(
            target=self._back, args=(upstream, client, cut), daemon=True
        ).start()
        try:
            while data := client.recv(65536):
                if CALL_BODY.search(data) and self._take_break():
                    # Cut before the call goes on, so that its answer is never
                    # relayed, however fast the upstream is (on a loaded
                    # machine it could answer before this thread cut the
                    # connection): the upstream has the whole call and runs it.
                    cut.set()
                    upstream.sendall(data)
                    client.shutdown(socket.SHUT_RDWR)
                    break
                upstream.sendall(data)
        except OSError:
            pass
        client.close()

    def _back(
        self, upstream: socket.socket, client: socket.socket, cut: threading.Event
    ) -> None:
        try:
            while data := upstream.recv(65536):
                if cut.is_set():
                    break  # the upstream ran the call; its answer goes nowhere
                client.sendall(data)
        except OSError:
            pass
        upstream.close()

    def _take_break(self) -> bool:
        with self.lock:
            if self.breaks <= 0:
                return False
            self.breaks -= 1
            return True

    def close(self) -> None:
        self.server.close()


@pytest.fixture
def relay(upstream: Upstream) -> Iterator[Relay]:
    port = int(upstream.url.rsplit(":", 1)[1].split("/")[0])
    relay = Relay(port)
    yield relay
    relay.close()


@pytest.fixture
def agent(with_key: Any) -> Any:
    return with_key("agent", "agent-retry", allow_unsafe=True)


def reached(upstream: Upstream, tool: str, expected: int) -> int:
    """The calls of ``tool`` the upstream got: a cut answer returns at once,
    maybe before the upstream has logged the call, so wait for ``expected``
    (and a little more, to see one too many)."""
    deadline = time.monotonic() + 5
    while len(upstream.calls_to(tool)) < expected and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    return len(upstream.calls_to(tool))


def through_relay(upstream: Upstream, relay: Relay, name: str) -> None:
    link_source(upstream, name=name)
    Source.objects.filter(name=name).update(url=f"http://127.0.0.1:{relay.port}/mcp")


def approved_call(agent: Any, name: str, arguments: dict[str, Any]) -> Any:
    body = {"name": name, "arguments": arguments}
    approval_id = agent.post(URL, body, format="json").json()["approval_id"]
    Approval.objects.filter(pk=approval_id).update(
        status="approved", decided=timezone.now()
    )
    return agent.post(URL, {**body, "approval_id": approval_id}, format="json")


def test_an_idempotent_tool_is_retried_once_after_a_broken_connection(
    agent, upstream, relay
):
    through_relay(upstream, relay, "relayed")
    approved_call(agent, "relayed.set_thermostat", {"celsius": 20})  # warm the pool
    upstream.calls.clear()
    relay.breaks = 1
    answer = approved_call(agent, "relayed.set_thermostat", {"celsius": 21}).json()
    assert answer["outcome"] == "ran", answer
    assert [call.arguments for call in upstream.calls] == [
        {"celsius": 21},
        {"celsius": 21},
    ]


def test_an_idempotent_tool_is_retried_at_most_once(agent, upstream, relay):
    through_relay(upstream, relay, "relayed")
    approved_call(agent, "relayed.set_thermostat", {"celsius": 20})
    upstream.calls.clear()
    relay.breaks = 5
    answer = approved_call(agent, "relayed.set_thermostat", {"celsius": 22}).json()
    assert answer["outcome"] == "failed"
    assert answer["reason"].endswith("(after 2 attempts)")
    assert reached(upstream, "set_thermostat", 2) == 2


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [("delete_file", {"path": "/a"}), ("send_note", {"to": "a", "text": "b"})],
)
def test_a_tool_not_marked_idempotent_is_never_retried(
    agent, upstream, relay, tool, arguments
):
    through_relay(upstream, relay, "relayed")
    warm = {"name": "relayed.get_forecast", "arguments": {"city": "x"}}
    assert agent.post(URL, warm, format="json").json()["outcome"] == "ran"
    upstream.calls.clear()
    relay.breaks = 1
    answer = approved_call(agent, f"relayed.{tool}", arguments).json()
    assert answer["outcome"] == "failed"
    assert answer["reason"].startswith("source 'relayed': ")
    assert reached(upstream, tool, 1) == 1


def test_a_tool_whose_own_hints_lost_idempotent_is_never_retried_on_the_upstreams_word(
    agent, upstream, relay
):
    """The upstream's last definition still says idempotent; the catalog tool's
    own annotations (a curator's edit) no longer do: only the tool's count."""
    through_relay(upstream, relay, "relayed")
    tool = Tool.objects.get(name="relayed.set_thermostat")
    tool.annotations = {
        key: value for key, value in tool.annotations.items() if key != "idempotentHint"
    }
    tool.save(update_fields=["annotations"])
    approved_call(agent, "relayed.set_thermostat", {"celsius": 20})  # warm the pool
    upstream.calls.clear()
    relay.breaks = 1
    answer = approved_call(agent, "relayed.set_thermostat", {"celsius": 23}).json()
    assert answer["outcome"] == "failed", answer
    assert reached(upstream, "set_thermostat", 1) == 1
