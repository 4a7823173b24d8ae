"""The settings of what Quiver reaches outside itself: the sources it syncs and
calls, the LLM that may shortlist tools, people's upstream accounts,
notifications (webhooks, email), metrics and the call path's share of the web
server. Read into ``config.settings``."""

from __future__ import annotations

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_int, env_list, env_str, env_url, web_server

# An OpenAI-format LLM the "llm" scorer may ask to shortlist tools (off unset).
QUIVER_LLM = {
    "BASE_URL": env_str("QUIVER_LLM_BASE_URL", ""),
    "MODEL": env_str("QUIVER_LLM_MODEL", "gpt-4o-mini"),
    "API_KEY": env_str("QUIVER_LLM_API_KEY", ""),
    "TIMEOUT_S": env_int("QUIVER_LLM_TIMEOUT_S", 20, minimum=1),
}

# Sources: MCP servers a catalog syncs tools from (README "Sources").
# Header values are encrypted with QUIVER_SOURCE_KEY (any long random text), else with a
# key derived from SECRET_KEY; QUIVER_SOURCE_OLD_KEYS (comma-separated) still decrypt.
QUIVER_SOURCE_KEY = env_str("QUIVER_SOURCE_KEY")
QUIVER_SOURCE_OLD_KEYS = [
    key.strip() for key in env_str("QUIVER_SOURCE_OLD_KEYS").split(",") if key.strip()
]
# Hosts and networks added to the built-in deny-list (cloud metadata addresses).
QUIVER_SOURCE_DENY = env_list("QUIVER_SOURCE_DENY", [])
# Every this many minutes each source is synced again; 0 turns periodic sync off.
QUIVER_SOURCE_SYNC_MINUTES = env_int(
    "QUIVER_SOURCE_SYNC_MINUTES", 0, minimum=0, maximum=100_000
)
# Pages of tools/list read at most per sync (a cursor that never ends is an error).
QUIVER_SOURCE_MAX_PAGES = env_int("QUIVER_SOURCE_MAX_PAGES", 100, minimum=1)
# A JSON file of stdio sources' commands ({"stdio": {name: {command, args, env, cwd}}}),
# read at every use; the only place a stdio command can be configured (sources.stdio).
QUIVER_SOURCES_FILE = env_str("QUIVER_SOURCES_FILE", "")
# Sources that ask each person for OAuth (vault/; how-to per-user-authorization):
# an access token is refreshed this long before it expires; a connection started in
# the console must come back within FLOW_SECONDS; every exchange with an
# authorization server (metadata, registration, tokens, revocation) waits at most
# TIMEOUT_SECONDS.
QUIVER_VAULT_REFRESH_MARGIN_SECONDS = env_int(
    "QUIVER_VAULT_REFRESH_MARGIN_SECONDS", 60, minimum=0, maximum=3600
)
QUIVER_VAULT_FLOW_SECONDS = env_int(
    "QUIVER_VAULT_FLOW_SECONDS", 600, minimum=30, maximum=3600
)
QUIVER_VAULT_TIMEOUT_SECONDS = env_int(
    "QUIVER_VAULT_TIMEOUT_SECONDS", 10, minimum=1, maximum=60
)

# Notifications (notify/, docs/how-to/operating.md): where links in webhooks and
# emails point (the console's address as people reach it; empty: no link).
QUIVER_PUBLIC_URL = env_url("QUIVER_PUBLIC_URL", ("https", "http"))
# Webhooks: one attempt's whole exchange, the attempts of one delivery, the
# backoff between them (doubling from BACKOFF_S, at most BACKOFF_MAX_S, jittered),
# how often each worker sweeps for due deliveries, the old secret's default grace
# after a rotation, and how many webhooks a catalog may have.
QUIVER_WEBHOOK_TIMEOUT_S = env_int(
    "QUIVER_WEBHOOK_TIMEOUT_S", 10, minimum=1, maximum=60
)
QUIVER_WEBHOOK_MAX_ATTEMPTS = env_int(
    "QUIVER_WEBHOOK_MAX_ATTEMPTS", 8, minimum=1, maximum=30
)
QUIVER_WEBHOOK_BACKOFF_S = env_int(
    "QUIVER_WEBHOOK_BACKOFF_S", 10, minimum=1, maximum=3600
)
QUIVER_WEBHOOK_BACKOFF_MAX_S = env_int(
    "QUIVER_WEBHOOK_BACKOFF_MAX_S", 3600, minimum=1, maximum=86_400
)
QUIVER_WEBHOOK_SWEEP_S = env_int("QUIVER_WEBHOOK_SWEEP_S", 15, minimum=1, maximum=3600)
QUIVER_WEBHOOK_ROTATION_GRACE_HOURS = env_int(
    "QUIVER_WEBHOOK_ROTATION_GRACE_HOURS", 24, minimum=0, maximum=720
)
QUIVER_WEBHOOKS_PER_CATALOG = env_int(
    "QUIVER_WEBHOOKS_PER_CATALOG", 20, minimum=1, maximum=1000
)
# Email to a catalog's approvers when a call waits for one (one per approval).
QUIVER_APPROVAL_EMAILS = env_bool("QUIVER_APPROVAL_EMAILS", True)
EMAIL_BACKENDS = {
    "console": "django.core.mail.backends.console.EmailBackend",
    "smtp": "django.core.mail.backends.smtp.EmailBackend",
    "dummy": "django.core.mail.backends.dummy.EmailBackend",
}
_email_backend = env_str("EMAIL_BACKEND", "console")
if _email_backend not in EMAIL_BACKENDS:
    raise ImproperlyConfigured("EMAIL_BACKEND: one of console, smtp, dummy")
EMAIL_BACKEND = EMAIL_BACKENDS[_email_backend]
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25, minimum=1, maximum=65_535)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    raise ImproperlyConfigured("EMAIL_USE_TLS, EMAIL_USE_SSL: set one, not both")
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10, minimum=1, maximum=300)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "quiver@localhost")
EMAIL_SUBJECT_PREFIX = env_str("EMAIL_SUBJECT_PREFIX", "[Quiver] ")

# GET /metrics (telemetry/, docs/how-to/operating.md): the bearer token a Prometheus
# scraper sends (admin API keys and signed-in admins may read it too); _FILE works.
QUIVER_METRICS_TOKEN = env_str("QUIVER_METRICS_TOKEN")
if QUIVER_METRICS_TOKEN and len(QUIVER_METRICS_TOKEN) < 16:
    raise ImproperlyConfigured("QUIVER_METRICS_TOKEN: must be at least 16 characters")
# Distinct catalogs (and sources) one process names in metric labels; later ones
# are counted as "other", so the number of series stays bounded.
QUIVER_METRICS_MAX_LABEL_VALUES = env_int(
    "QUIVER_METRICS_MAX_LABEL_VALUES", 100, minimum=1, maximum=10_000
)
# Every process of a host writes its metrics here and /metrics adds them up
# (prometheus_client's multiprocess mode; make run and the image set it). Read by
# prometheus_client itself: one directory per host or container, never shared.
PROMETHEUS_MULTIPROC_DIR = os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")
if PROMETHEUS_MULTIPROC_DIR:
    try:
        Path(PROMETHEUS_MULTIPROC_DIR).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ImproperlyConfigured(
            f"PROMETHEUS_MULTIPROC_DIR: cannot create {PROMETHEUS_MULTIPROC_DIR}"
        ) from exc
# A Celery worker in a container of its own serves its processes' metrics on this
# port (GET /metrics, the token above); 0: off (make run's worker shares the web's
# directory, so the web's /metrics already holds it).
QUIVER_WORKER_METRICS_PORT = env_int(
    "QUIVER_WORKER_METRICS_PORT", 0, minimum=0, maximum=65_535
)
if QUIVER_WORKER_METRICS_PORT and not (
    QUIVER_METRICS_TOKEN and PROMETHEUS_MULTIPROC_DIR
):
    raise ImproperlyConfigured(
        "QUIVER_WORKER_METRICS_PORT: needs QUIVER_METRICS_TOKEN and "
        "PROMETHEUS_MULTIPROC_DIR (a worker's processes add up there)"
    )

# The web server (config/gunicorn.py) and what the call path may take of it.
# A call never outlives its request: its upstream time is bounded by
# QUIVER_CALL_TIMEOUT_MAX_SECONDS, well under gunicorn's timeout. Upstream calls in
# flight are limited per web process (below its threads, leaving threads for
# selections and /healthz), per source and per key (the last two across
# processes, in Redis): calls.limits.
QUIVER_WEB = web_server()
QUIVER_CALL_TIMEOUT_MAX_SECONDS = env_int(
    "QUIVER_CALL_TIMEOUT_MAX_SECONDS", 45, minimum=1, maximum=3600
)
if QUIVER_WEB.timeout_s - 15 < QUIVER_CALL_TIMEOUT_MAX_SECONDS:
    raise ImproperlyConfigured(
        "QUIVER_CALL_TIMEOUT_MAX_SECONDS: must be at most "
        f"QUIVER_WEB_TIMEOUT_SECONDS - 15 ({QUIVER_WEB.timeout_s - 15}): a call "
        "and its audit rows must end before gunicorn's timeout"
    )
QUIVER_CALLS_PER_PROCESS = env_int(
    "QUIVER_CALLS_PER_PROCESS", 8, minimum=1, maximum=QUIVER_WEB.threads - 2
)
QUIVER_CALLS_PER_SOURCE = env_int("QUIVER_CALLS_PER_SOURCE", 16, minimum=1)
QUIVER_CALLS_PER_KEY = env_int("QUIVER_CALLS_PER_KEY", 8, minimum=1)
# An attempt with no outcome this long after its deadline is recorded
# "interrupted" by the worker's sweep (calls.attempts).
QUIVER_CALL_SWEEP_MARGIN_S = env_int(
    "QUIVER_CALL_SWEEP_MARGIN_S", 30, minimum=1, maximum=86_400
)
