"""config.devstack: what `make run` and `make test` start, and what they stop."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from config.devstack import (
    BASE_DIR,
    RunOptions,
    live_users,
    run_options,
    web_command,
)


def test_make_run_has_debug_off_by_default():
    assert run_options([], {}) == RunOptions(port=8000, debug=False)


@pytest.mark.parametrize("name", ["QUIVER_DEV", "DEBUG"])
def test_an_explicit_quiver_dev_or_debug_turns_debug_on(name):
    assert run_options([], {name: "1"}).debug is True
    assert run_options([], {name: "true"}).debug is True


def test_debug_false_stays_off_even_with_quiver_dev_unset():
    assert run_options([], {"DEBUG": "false", "QUIVER_DEV": "0"}).debug is False


def test_a_misspelt_debug_value_stops_start_up_naming_it():
    with pytest.raises(SystemExit, match="DEBUG: expected true or false"):
        run_options([], {"DEBUG": "ture"})


def test_the_port_comes_from_the_argument_or_from_port():
    assert run_options(["--port", "8080"], {}).port == 8080
    assert run_options([], {"PORT": "9090"}).port == 9090
    assert run_options(["--port", "8081"], {"PORT": "9090"}).port == 8081


@pytest.mark.parametrize("port", ["0", "70000", "http", "-1"])
def test_a_bad_port_is_refused_naming_the_rule(port):
    with pytest.raises(SystemExit, match="PORT: expected a port number"):
        run_options(["--port", port], {})


def test_the_web_server_is_gunicorn_on_loopback_at_the_port():
    command = web_command(RunOptions(port=8123, debug=False))
    assert command[1:3] == ["-m", "gunicorn"]
    assert "runserver" not in command
    assert command[command.index("--bind") + 1] == "127.0.0.1:8123"


HOLD_POSTGRES = """
import sys
from pathlib import Path
from config.devstack import embedded_postgres
with embedded_postgres(Path(sys.argv[1])):
    print("up", flush=True)
    sys.stdin.readline()
"""


def _hold(data: Path) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_POSTGRES, str(data)],
        cwd=BASE_DIR,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    if holder.stdout.readline().strip() != "up":
        _, stderr = holder.communicate(timeout=60)
        pytest.fail(f"the holder did not start Postgres:\n{stderr}")
    return holder


def _leave(holder: subprocess.Popen[str]) -> str:
    _, stderr = holder.communicate("\n", timeout=120)
    assert holder.returncode == 0, stderr
    return stderr


def test_postgres_is_stopped_when_the_last_run_using_it_leaves(tmp_path):
    data = tmp_path / "pg"
    first = _hold(data)
    second = _hold(data)
    assert "Postgres stopped" not in _leave(first)
    assert (data / "postmaster.pid").exists(), "stopped under a run still using it"
    assert "Postgres stopped" in _leave(second)
    assert not (data / "postmaster.pid").exists()
    assert live_users(data) == []
