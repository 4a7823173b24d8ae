"""`make manage` while `make run` is up shares the running stack's services.

Two devstack processes on one state directory use one redis-server (one writer of
the append-only file), the last to leave stops it, and each stack's gunicorn has
its own control socket.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import redis

from config.devstack import (
    RunOptions,
    live_users,
    running_redis,
    web_command,
)

HOLD_REDIS = """
import sys
from pathlib import Path
from config.devstack import embedded_redis
with embedded_redis(Path(sys.argv[1]), persist=sys.argv[2] == "persist") as url:
    print(url, flush=True)
    sys.stdin.readline()
"""


def hold(data: Path, mode: str = "persist") -> tuple[subprocess.Popen[str], str]:
    """A devstack process holding the Redis of ``data`` until told to leave."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_REDIS, str(data), mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path.cwd())},
    )
    assert holder.stdout is not None
    url = holder.stdout.readline().strip()
    assert url.startswith("redis://"), holder.stderr.read() if holder.stderr else ""
    return holder, url


def leave(holder: subprocess.Popen[str]) -> str:
    _, stderr = holder.communicate("\n", timeout=60)
    assert holder.returncode == 0, stderr
    return stderr


def redis_servers_on(data: Path) -> list[int]:
    """Pids of the redis-server processes working in ``data`` (redis-server
    changes to its --dir and rewrites its command line, so the cwd tells)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            name = (entry / "comm").read_text().strip()
            cwd = Path(os.readlink(entry / "cwd"))
        except OSError:
            continue
        if name.startswith("redis-server") and cwd.is_relative_to(data):
            found.append(int(entry.name))
    return found


def test_a_second_devstack_on_the_same_state_dir_uses_the_running_redis(tmp_path):
    data = tmp_path / "redis"
    run, run_url = hold(data)
    manage, manage_url = hold(data)
    try:
        assert manage_url == run_url
        assert len(redis_servers_on(data)) == 1
        redis.Redis.from_url(run_url).set("queued", "job")
        assert redis.Redis.from_url(manage_url).get("queued") == b"job"
    finally:
        manage_out = leave(manage)
        run_out = leave(run)
    assert "using the one already running" in manage_out
    assert "Redis stopped" not in manage_out
    assert "Redis stopped" in run_out
    assert redis_servers_on(data) == []


def test_the_server_outlives_the_run_that_started_it_while_manage_uses_it(tmp_path):
    data = tmp_path / "redis"
    run, url = hold(data)
    manage, _ = hold(data)
    assert "Redis stopped" not in leave(run)
    assert redis.Redis.from_url(url).ping()
    assert len(redis_servers_on(data)) == 1
    assert "Redis stopped" in leave(manage)
    assert redis_servers_on(data) == []
    assert running_redis(data) is None
    assert live_users(data) == []


def test_a_dead_server_is_replaced_not_joined(tmp_path):
    data = tmp_path / "redis"
    run, url = hold(data)
    (pid,) = redis_servers_on(data)
    os.kill(pid, 9)
    try:
        manage, new_url = hold(data)
        assert len(redis_servers_on(data)) == 1
        assert redis.Redis.from_url(new_url).ping()
        leave(manage)
    finally:
        leave(run)
    assert redis_servers_on(data) == []


def test_test_runs_keep_a_server_and_directory_each(tmp_path):
    data = tmp_path / "redis"
    first, first_url = hold(data, "test")
    second, second_url = hold(data, "test")
    try:
        assert first_url != second_url
        assert len(redis_servers_on(data)) == 2
    finally:
        leave(first)
        leave(second)


# gunicorn's control socket ----------------------------------------------------------


def control_socket(command: list[str]) -> str | None:
    if "--no-control-socket" in command:
        return None
    return command[command.index("--control-socket") + 1]


def test_each_state_dir_gets_its_own_gunicorn_control_socket(tmp_path):
    options = RunOptions(port=8123, debug=False)
    one = control_socket(web_command(options, tmp_path / "one"))
    two = control_socket(web_command(options, tmp_path / "two"))
    assert one == str(tmp_path / "one" / "gunicorn.ctl")
    assert two == str(tmp_path / "two" / "gunicorn.ctl")
    assert "/.gunicorn/" not in str(one)


def test_a_state_dir_too_deep_for_a_socket_path_runs_without_one(tmp_path):
    deep = tmp_path / ("d" * 120)
    command = web_command(RunOptions(port=8123, debug=False), deep)
    assert "--no-control-socket" in command
    assert "--control-socket" not in command


def test_the_installed_gunicorn_accepts_the_arguments(tmp_path):
    command = web_command(RunOptions(port=8123, debug=False), tmp_path)
    from gunicorn.config import Config

    config = Config()
    parsed = config.parser().parse_args(command[4:])
    assert parsed.control_socket == str(tmp_path / "gunicorn.ctl")


def test_make_run_puts_the_socket_in_the_checkout_s_state_dir():
    command = web_command(RunOptions(port=8000, debug=False))
    assert control_socket(command) in (None, str(Path.cwd() / ".quiver/gunicorn.ctl"))
