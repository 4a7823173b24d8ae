"""Small typed readers for deploy-time settings.

Every value comes from the environment; a value that cannot be read stops start-up with
``ImproperlyConfigured`` naming the variable, so a typo never becomes a silent default.
A ``NAME_FILE`` variable (Docker secrets) is read in place of ``NAME``.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    """A string, read from NAME or from the file NAME_FILE points at."""
    file_path = os.environ.get(f"{name}_FILE")
    if file_path:
        try:
            return Path(file_path).read_text().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE: cannot read {file_path}") from exc
    return os.environ.get(name, default)


def env_secret(name: str, default: str | None = None) -> str:
    """A secret; required (no default) unless one is given."""
    value = env_str(name, default or "")
    if not value:
        raise ImproperlyConfigured(f"{name}: must be set")
    return value


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}: expected true or false, got {raw!r}")


def env_int(
    name: str, default: int, minimum: int | None = None, maximum: int | None = None
) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}: expected an integer, got {raw!r}") from exc
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}: must be at least {minimum}")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"{name}: must be at most {maximum}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def database_from_url(name: str, url: str) -> dict[str, object]:
    """Django DATABASES entry from a postgres URL (a unix socket via ?host=/path)."""
    parsed = urlparse(url)
    if parsed.scheme not in ("postgres", "postgresql"):
        raise ImproperlyConfigured(f"{name}: expected a postgresql:// URL")
    query = parse_qs(parsed.query)
    host = query.get("host", [parsed.hostname or ""])[0]
    database = unquote(parsed.path.lstrip("/"))
    if not database:
        raise ImproperlyConfigured(f"{name}: the URL names no database")
    try:
        port = parsed.port
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}: the port is not a number") from exc
    return {
        "ENGINE": "config.postgres",
        "NAME": database,
        "USER": unquote(parsed.username or ""),
        "PASSWORD": unquote(parsed.password or ""),
        "HOST": host,
        "PORT": str(port or ""),
        "CONN_MAX_AGE": 60,
        # A dead connection is noticed and replaced at the next request, so
        # Quiver recovers by itself when the database comes back.
        "CONN_HEALTH_CHECKS": True,
        # A database that does not answer fails a request in seconds (a 503).
        "OPTIONS": {"connect_timeout": 3},
    }


def env_url(name: str, schemes: tuple[str, ...]) -> str:
    """A URL whose scheme is one of ``schemes`` and that names a host (or, for
    ``unix``, a path); empty when unset."""
    raw = env_str(name).strip()
    if not raw:
        return ""
    parsed = urlparse(raw)
    if parsed.scheme not in schemes:
        raise ImproperlyConfigured(
            f"{name}: expected a URL starting {' or '.join(s + '://' for s in schemes)}"
        )
    where = parsed.path if parsed.scheme == "unix" else parsed.hostname
    if not where:
        raise ImproperlyConfigured(f"{name}: the URL names no host or path")
    try:
        parsed.port  # noqa: B018 - raises on a port that is not a number
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}: the port is not a number") from exc
    return raw


IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def env_networks(name: str) -> tuple[IPNetwork, ...]:
    """Comma-separated IP addresses and CIDR networks (``10.0.0.5, 10.1.0.0/16``);
    empty when unset. A bad item stops start-up naming it."""
    networks = []
    for item in env_list(name, []):
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError as exc:
            raise ImproperlyConfigured(
                f"{name}: {item!r} is not an IP address or CIDR network"
            ) from exc
    return tuple(networks)


@dataclass(frozen=True)
class WebServer:
    """How gunicorn runs Quiver (``config/gunicorn.py``), read here once so the
    settings can check the call path's limits against it."""

    workers: int
    threads: int
    timeout_s: int


def web_server() -> WebServer:
    """``QUIVER_WEB_WORKERS`` processes of ``QUIVER_WEB_THREADS`` threads each,
    killed by gunicorn after ``QUIVER_WEB_TIMEOUT_SECONDS`` without a heartbeat."""
    return WebServer(
        workers=env_int("QUIVER_WEB_WORKERS", 2, minimum=1, maximum=64),
        threads=env_int("QUIVER_WEB_THREADS", 12, minimum=4, maximum=256),
        timeout_s=env_int("QUIVER_WEB_TIMEOUT_SECONDS", 60, minimum=30, maximum=3600),
    )


# The most database connections one process holds at once. A web thread: its
# own (Django's, kept between requests), the one its audit rows are sent early
# on (audit.writer), and the same two again on the gateway's worker thread that
# does a handshake-era /mcp request's Django work while the request's thread
# waits. A Celery process (a prefork child, or the main process with its threads,
# the approvals' expiry and the audit sealer): its own and its audit connection.
CONNECTIONS_PER_WEB_THREAD = 4
CONNECTIONS_PER_WORKER_PROCESS = 2
# make manage, a migration, a psql session, a monitor: room beside the plan.
CONNECTIONS_SPARE = 20


def database_connections(web: WebServer, worker_processes: int) -> int:
    """Postgres' ``max_connections`` for this process plan: every web thread's
    connections, every Celery process's, and ``CONNECTIONS_SPARE``. Fewer, and a
    busy moment refuses connections (a 503 "database: busy")."""
    threads = web.workers * web.threads
    return (
        threads * CONNECTIONS_PER_WEB_THREAD
        + worker_processes * CONNECTIONS_PER_WORKER_PROCESS
        + CONNECTIONS_SPARE
    )


LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
# Scopes sent when QUIVER_OIDC_SCOPES is unset; "openid" is always among them.
OIDC_DEFAULT_SCOPES = ("openid", "email", "profile")


@dataclass(frozen=True)
class OidcProvider:
    """The company's OpenID provider people sign in with (sso/), read here once."""

    issuer: str
    client_id: str
    client_secret: str
    scopes: tuple[str, ...]
    groups_claim: str
    name: str
    clock_skew_s: int
    session_s: int
    timeout_s: int


def oidc_provider() -> OidcProvider | None:
    """Single sign-on's settings; None (off) while ``QUIVER_OIDC_ISSUER`` is unset.
    The issuer is https, or http on a loopback address (a provider on the same
    machine, as the tests run one); the client id and secret are then required."""
    issuer = env_url("QUIVER_OIDC_ISSUER", ("https", "http"))
    if not issuer:
        return None
    parsed = urlparse(issuer)
    if parsed.scheme == "http" and parsed.hostname not in LOOPBACK_HOSTS:
        raise ImproperlyConfigured(
            "QUIVER_OIDC_ISSUER: must be https (http only for 127.0.0.1 or localhost)"
        )
    if parsed.query or parsed.fragment:
        raise ImproperlyConfigured("QUIVER_OIDC_ISSUER: no query or fragment")
    scopes = tuple(env_str("QUIVER_OIDC_SCOPES", " ".join(OIDC_DEFAULT_SCOPES)).split())
    return OidcProvider(
        issuer=issuer,
        client_id=env_secret("QUIVER_OIDC_CLIENT_ID"),
        client_secret=env_secret("QUIVER_OIDC_CLIENT_SECRET"),
        scopes=scopes if "openid" in scopes else ("openid", *scopes),
        groups_claim=env_str("QUIVER_OIDC_GROUPS_CLAIM", "groups").strip() or "groups",
        name=env_str("QUIVER_OIDC_PROVIDER_NAME", "SSO").strip() or "SSO",
        clock_skew_s=env_int("QUIVER_OIDC_CLOCK_SKEW_SECONDS", 60, 0, 300),
        session_s=env_int("QUIVER_OIDC_SESSION_HOURS", 8, 1, 720) * 3600,
        timeout_s=env_int("QUIVER_OIDC_TIMEOUT_SECONDS", 10, 1, 30),
    )
