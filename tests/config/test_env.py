"""config.env: bad values stop start-up with a message naming the variable."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import database_from_url, env_bool, env_int, env_str


def test_a_bad_boolean_names_the_variable(monkeypatch):
    monkeypatch.setenv("DEBUG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="DEBUG"):
        env_bool("DEBUG")


def test_an_integer_out_of_range_names_the_variable(monkeypatch):
    monkeypatch.setenv("QUIVER_EF_SEARCH", "0")
    with pytest.raises(
        ImproperlyConfigured, match="QUIVER_EF_SEARCH: must be at least 1"
    ):
        env_int("QUIVER_EF_SEARCH", 100, minimum=1)


def test_a_secret_is_read_from_its_file(monkeypatch, tmp_path):
    secret = tmp_path / "key"
    secret.write_text("s3cret\n")
    monkeypatch.setenv("SECRET_KEY_FILE", str(secret))
    assert env_str("SECRET_KEY") == "s3cret"


def test_a_unix_socket_url_becomes_a_host_path():
    db = database_from_url(
        "DATABASE_URL", "postgresql://postgres:@/quiver?host=/tmp/pg"
    )
    assert db["HOST"] == "/tmp/pg"
    assert db["NAME"] == "quiver"


def test_a_url_of_another_database_is_refused():
    with pytest.raises(ImproperlyConfigured, match="DATABASE_URL"):
        database_from_url("DATABASE_URL", "mysql://x@y/z")
