"""Production hardening: the CSP, cookie flags, and a clean `check --deploy`."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from config.csp import POLICY

ROOT = Path(__file__).resolve().parents[2]
INLINE_SCRIPT = re.compile(
    r"<script(?![^>]*\bsrc=)(?![^>]*application/json)|\son[a-z]+=|javascript:", re.I
)


def _directive(policy: str, name: str) -> str:
    for part in policy.split(";"):
        if part.strip().startswith(name + " "):
            return part.strip()
    raise AssertionError(f"{name} missing from {policy}")


def test_the_policy_allows_scripts_only_from_our_own_files():
    script_src = _directive(POLICY, "script-src")
    assert script_src == "script-src 'self'"
    assert "unsafe" not in _directive(POLICY, "default-src")
    assert _directive(POLICY, "frame-ancestors") == "frame-ancestors 'none'"


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/login/", "/tools/", "/healthz", "/nope/"])
def test_every_page_carries_the_policy(client, member, path):
    client.force_login(member)
    response = client.get(path)
    assert response["Content-Security-Policy"] == POLICY


@pytest.mark.django_db
def test_the_api_docs_and_the_admin_carry_the_policy(as_user, admin_user):
    api = as_user(admin_user)
    for path in ("/api/docs/", "/admin/"):
        assert api.get(path)["Content-Security-Policy"] == POLICY


def test_no_template_holds_inline_script_handlers_or_javascript_urls():
    offenders = [
        f"{path.relative_to(ROOT)}: {match.group(0)!r}"
        for path in (ROOT / "templates").rglob("*.html")
        for match in INLINE_SCRIPT.finditer(path.read_text())
    ]
    assert offenders == []


@pytest.mark.django_db
def test_session_and_csrf_cookies_are_http_only(client, member):
    client.get("/login/")
    response = client.post(
        "/login/", {"username": member.username, "password": "pw-12345678"}
    )
    assert response.status_code == 302
    assert response.cookies["sessionid"]["httponly"] is True
    assert client.cookies["csrftoken"]["httponly"] is True


def _manage(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        # The browser tests' async opt-out is theirs, not a deployment's.
        env={
            **{k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"},
            **env,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )


PRODUCTION = {
    "DEBUG": "false",
    "QUIVER_HTTPS": "true",
    "SECRET_KEY": secrets.token_urlsafe(60),
    "ALLOWED_HOSTS": "quiver.example.com",
}


def test_check_deploy_is_clean_under_production_settings():
    result = _manage("check", "--deploy", "--fail-level", "WARNING", **PRODUCTION)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_the_api_schema_validates_without_warnings():
    result = _manage(
        "spectacular", "--validate", "--fail-on-warn", "--file", os.devnull,
        **PRODUCTION,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Warning" not in result.stderr


def test_https_settings_stay_off_for_plain_http_runs():
    result = _manage(
        "shell", "-c",
        "from django.conf import settings as s; "
        "print(s.SECURE_SSL_REDIRECT, s.SESSION_COOKIE_SECURE, s.SECURE_HSTS_SECONDS)",
        DEBUG="false", SECRET_KEY=secrets.token_urlsafe(60), QUIVER_HTTPS="false",
    )  # fmt: skip
    assert result.stdout.splitlines()[-1].split() == ["False", "False", "0"]
