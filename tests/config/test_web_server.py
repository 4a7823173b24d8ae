"""One web server setup everywhere (issue 30, point 3): ``make run``, the Docker
image and the tests' servers run gunicorn from config/gunicorn.py, with threaded
workers; the settings refuse a call bound that gunicorn's timeout would cut and
a per-process call limit that would leave no thread for selections."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from config import gunicorn
from config.devstack import RunOptions, web_command

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ["-c", "python:config.gunicorn"]


def test_gunicorn_runs_threaded_workers_with_threads_to_spare():
    from django.conf import settings

    assert gunicorn.worker_class == "gthread"
    assert gunicorn.threads == settings.QUIVER_WEB.threads >= 4
    assert gunicorn.timeout == settings.QUIVER_WEB.timeout_s
    per_process = settings.QUIVER_CALLS_PER_PROCESS
    longest = settings.QUIVER_CALL_TIMEOUT_MAX_SECONDS
    assert per_process <= gunicorn.threads - 2
    assert longest <= gunicorn.timeout - 15


def test_make_run_docker_and_the_tests_use_the_same_gunicorn_settings():
    command = web_command(RunOptions(port=8123, debug=False))
    at = command.index("-c")
    assert command[at : at + 2] == CONFIG
    docker = (ROOT / "Dockerfile").read_text().splitlines()[-1]
    assert '"-c", "python:config.gunicorn"' in docker
    assert '"--workers"' not in docker and '"--timeout"' not in docker
    assert "python:config.gunicorn" in (ROOT / "tests" / "outages.py").read_text()


def settings_error(**env: str) -> str:
    """What loading the settings says with ``env`` set (empty: they load)."""
    code = "import django; django.setup()"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={"SECRET_KEY": "x", "DJANGO_SETTINGS_MODULE": "config.settings", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.stderr.strip().splitlines()[-1] if done.returncode else ""


@pytest.mark.parametrize(
    ("env", "rule"),
    [
        (
            {"QUIVER_CALL_TIMEOUT_MAX_SECONDS": "50"},
            "QUIVER_CALL_TIMEOUT_MAX_SECONDS: must be at most "
            "QUIVER_WEB_TIMEOUT_SECONDS - 15 (45)",
        ),
        (
            {
                "QUIVER_WEB_TIMEOUT_SECONDS": "40",
                "QUIVER_CALL_TIMEOUT_MAX_SECONDS": "30",
            },
            "QUIVER_CALL_TIMEOUT_MAX_SECONDS: must be at most "
            "QUIVER_WEB_TIMEOUT_SECONDS - 15 (25)",
        ),
        (
            {"QUIVER_WEB_THREADS": "6", "QUIVER_CALLS_PER_PROCESS": "5"},
            "QUIVER_CALLS_PER_PROCESS: must be at most 4",
        ),
    ],
)
def test_the_settings_refuse_limits_the_web_server_cannot_keep(env, rule):
    assert rule in settings_error(**env)


def test_a_longer_web_timeout_allows_longer_calls():
    env = {"QUIVER_WEB_TIMEOUT_SECONDS": "120", "QUIVER_CALL_TIMEOUT_MAX_SECONDS": "90"}
    assert settings_error(**env) == ""
