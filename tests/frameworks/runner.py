"""Running Python in the frameworks' venv (.quiver/frameworks/venv, `make
frameworks`) against a live Quiver: an example or a script to completion, or a
script the test talks to line by line. Offline: proxies point at a closed port,
so a request off the loopback fails, and no LLM or tracing key is passed on."""

from __future__ import annotations

import os
import queue
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from audit.models import AuditEvent
from tests.upstream import Upstream

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".quiver" / "frameworks" / "venv" / "bin" / "python"
SCRIPTS = Path(__file__).resolve().parent / "scripts"
TIMEOUT = 180
SECRETS = ("OPENAI_", "ANTHROPIC_", "LANGSMITH_", "LANGCHAIN_")
NOWHERE = "http://127.0.0.1:9"


@dataclass
class Live:
    url: str
    key: str
    upstream: Upstream | None = None  # the test's own upstream, if any


def events(kind: str) -> list[AuditEvent]:
    """The audit rows of ``kind`` by the scripts' key (conftest's ``live``)."""
    rows = AuditEvent.objects.filter(event_type=kind, actor_name__contains="framework")
    return list(rows.order_by("pk"))


def call_rows() -> list[tuple[AuditEvent, AuditEvent]]:
    """Each call that reached for the upstream, as the call path records it:
    its ``started`` row and its outcome row, which names the start as ``call_id``."""
    rows = events("tool_call")
    ends = {row.input.get("call_id"): row for row in rows if not started(row)}
    return [(row, ends[row.pk]) for row in rows if started(row)]


def started(row: AuditEvent) -> bool:
    return row.output["outcome"] == "started"


def command(path: Path, *args: str) -> list[str]:
    assert PYTHON.exists(), f"{PYTHON} is missing: `make frameworks` builds it"
    return [str(PYTHON), str(path), *args]


def environment(live: Live) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(SECRETS)}
    proxies = dict.fromkeys(("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"), NOWHERE)
    return {
        **env,
        **proxies,
        "NO_PROXY": "127.0.0.1,localhost",
        "QUIVER_URL": live.url,
        "QUIVER_API_KEY": live.key,
    }


def run(path: Path, live: Live, *args: str) -> str:
    """The script's output, once it exited 0."""
    done = subprocess.run(
        command(path, *args),
        cwd=ROOT,
        env=environment(live),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-8000:]
    return done.stdout


def run_example(name: str, live: Live, *args: str) -> str:
    return run(ROOT / "examples" / f"{name}.py", live, *args)


def run_script(name: str, live: Live, *args: str) -> str:
    return run(SCRIPTS / f"{name}.py", live, *args)


class Script:
    """A script of scripts/ that the test reads line by line and writes to."""

    def __init__(self, name: str, live: Live) -> None:
        self.process = subprocess.Popen(
            command(SCRIPTS / f"{name}.py"),
            cwd=ROOT,
            env=environment(live),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put("")  # the end

    def line(self) -> str:
        try:
            line = self.lines.get(timeout=TIMEOUT)
        except queue.Empty:
            self.process.kill()
            raise AssertionError(f"no line in {TIMEOUT} s") from None
        if not line:
            self.process.wait(timeout=TIMEOUT)
            assert self.process.stderr is not None
            raise AssertionError(f"the script ended: {self.process.stderr.read()}")
        return line

    def send(self, text: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(text + "\n")
        self.process.stdin.flush()

    def finish(self) -> None:
        assert self.process.wait(timeout=TIMEOUT) == 0
