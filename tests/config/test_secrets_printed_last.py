"""A command that prints a secret prints it as the last line of stdout, alone,
with nothing after it: `... | tail -n 1` is the secret, whatever else ran.

Each command runs as a real ``manage.py`` process (so nothing a thread, a logger or
Django prints after ``handle`` can hide), against the test database.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import global_settings
from django.contrib.auth import authenticate

from tests.conftest import worker_env

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]


def manage(*args: str, state: Path) -> subprocess.CompletedProcess[str]:
    env = worker_env() | {"QUIVER_STATE_DIR": str(state)}
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def last_line_alone(stdout: str) -> str:
    """The last line, checked to be all that follows the one before it."""
    assert stdout.endswith("\n"), repr(stdout[-80:])
    *before, secret = stdout.rstrip("\n").split("\n")
    assert stdout == "\n".join([*before, secret]) + "\n"
    assert secret == secret.strip() and " " not in secret
    assert before, "the secret comes after a line saying what it is"
    return secret


def test_create_api_client_prints_the_key_last(tmp_path, api):
    result = manage(
        "create_api_client",
        "ci-bot",
        "--scope",
        "agent",
        "--all-catalogs",
        state=tmp_path,
    )
    key = last_line_alone(result.stdout)
    assert key.startswith("qv_")
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert api.get("/api/v1/tools/").status_code == 200


@pytest.mark.parametrize("demo", [[], ["--no-demo"]], ids=["demo", "no-demo"])
def test_bootstrap_prints_the_admin_password_last(
    tmp_path, purged_broker, demo, settings
):
    # The subprocess hashed with the real hashers, not the tests' fast one.
    settings.PASSWORD_HASHERS = global_settings.PASSWORD_HASHERS
    result = manage("bootstrap", *demo, state=tmp_path)
    password = last_line_alone(result.stdout)
    assert authenticate(username="admin", password=password) is not None
    saved = (tmp_path / "admin_password.txt").read_text().strip()
    assert saved == password
    assert "Queued embedding" in result.stdout  # printed before, not after


def test_bootstrap_run_again_prints_no_secret(tmp_path, purged_broker):
    manage("bootstrap", "--no-demo", state=tmp_path)
    again = manage("bootstrap", "--no-demo", state=tmp_path).stdout
    password = (tmp_path / "admin_password.txt").read_text().strip()
    assert password not in again
    assert again.rstrip("\n").split("\n")[-1].startswith("Log in as admin")
