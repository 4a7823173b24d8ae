"""What a new operator runs: the image, the compose file, the first bootstrap."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml
from django.contrib.auth import authenticate, get_user_model
from django.core.management import call_command

ROOT = Path(__file__).resolve().parents[2]
LONG_RUNNING = ("postgres", "redis", "web", "worker", "learning-worker")


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def dockerfile() -> list[str]:
    return (ROOT / "Dockerfile").read_text().splitlines()


def test_the_image_leaves_local_state_venv_and_git_out():
    ignored = (ROOT / ".dockerignore").read_text().split()
    for entry in (".venv", ".quiver", ".git", "bench/results", ".env", "secrets"):
        assert entry in ignored


def test_the_image_runs_as_quiver_with_a_state_volume_it_owns():
    lines = dockerfile()
    assert "USER quiver" in lines
    assert any("chown quiver:quiver /data" in line for line in lines)
    assert any("QUIVER_STATE_DIR=/data" in line for line in lines)
    assert 'VOLUME ["/data"]' in lines
    # USER comes after the last RUN: nothing the app writes is root-owned.
    last_run = max(i for i, line in enumerate(lines) if line.startswith("RUN"))
    assert lines.index("USER quiver") > last_run


def test_every_long_running_service_restarts_and_quiver_mounts_the_state():
    services = compose()["services"]
    for name in LONG_RUNNING:
        assert services[name]["restart"] == "unless-stopped", name
    for name in ("migrate", "web", "worker", "learning-worker"):
        assert services[name]["volumes"] == ["quiver-state:/data"], name
        assert services[name]["environment"]["QUIVER_STATE_DIR"] == "/data"


def consumed(command: list[str]) -> set[str]:
    return set(command[command.index("-Q") + 1].split(","))


def test_every_queue_tasks_are_routed_to_has_a_worker_in_compose_and_make_run():
    from config.devstack import worker_commands
    from telemetry.health import routed_queues

    services = compose()["services"]
    in_compose = [
        consumed(s["command"])
        for s in services.values()
        if "-Q" in str(s.get("command"))
    ]
    in_make_run = [consumed(command) for command in worker_commands()]
    assert routed_queues() == {"quiver", "learning"}
    for workers in (in_compose, in_make_run):
        assert set().union(*workers) == routed_queues()
        # Learning work never shares a worker with imports and syncs.
        assert all(len(queues) == 1 for queues in workers)


def test_no_secret_is_written_in_the_compose_file():
    text = (ROOT / "docker-compose.yml").read_text()
    services = compose()["services"]
    password = services["postgres"]["environment"]["POSTGRES_PASSWORD"]
    assert password.startswith("${POSTGRES_PASSWORD:?")
    assert "SECRET_KEY:" not in text
    assert "quiver:quiver@" not in text


def test_the_web_service_runs_without_debug_and_https_follows_the_env():
    env = compose()["services"]["web"]["environment"]
    assert env["DEBUG"] == "false"
    assert env["QUIVER_HTTPS"] == "${QUIVER_HTTPS:-false}"
    assert "gunicorn" in dockerfile()[-1]


def test_the_demo_catalog_is_loaded_only_when_asked_for():
    migrate = compose()["services"]["migrate"]
    assert migrate["environment"]["QUIVER_DEMO"] == "${QUIVER_DEMO:-false}"
    assert "bootstrap --no-demo" in migrate["command"][-1]


@pytest.mark.django_db
def test_bootstrap_saves_the_admin_password_in_the_state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("QUIVER_STATE_DIR", str(tmp_path / "state"))
    call_command("bootstrap", "--no-demo", stdout=io.StringIO())
    password = (tmp_path / "state" / "admin_password.txt").read_text().strip()
    assert authenticate(username="admin", password=password) is not None


@pytest.mark.django_db
def test_bootstrap_with_an_unwritable_state_dir_creates_no_admin(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("QUIVER_STATE_DIR", str(blocker / "state"))
    with pytest.raises(OSError):
        call_command("bootstrap", "--no-demo")
    assert not get_user_model().objects.filter(username="admin").exists()


def test_the_image_bakes_the_model_graphs_where_the_app_reads_them():
    text = "\n".join(dockerfile())
    assert "QUIVER_MODEL_GRAPHS_DIR=/opt/quiver/models" in text
    assert 'build_model_graphs \\\n        --into "$QUIVER_MODEL_GRAPHS_DIR"' in text
    # Built before the app's user takes over: the folder stays read-only to it.
    assert text.index("build_model_graphs") < text.index("USER quiver")


def test_compose_s_postgres_takes_a_connection_for_every_thread_and_process():
    from config.env import database_connections, web_server

    services = compose()["services"]
    command = services["postgres"]["command"]
    allowed = int(command[command.index("-c") + 1].split("=", 1)[1])
    workers = [s["command"] for s in services.values() if "-Q" in str(s.get("command"))]
    processes = sum(int(c[c.index("--concurrency") + 1]) + 1 for c in workers)
    assert allowed >= database_connections(web_server(), processes)
