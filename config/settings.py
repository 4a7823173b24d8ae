"""Quiver settings: every deploy-time value comes from the environment (config.env)."""

from __future__ import annotations

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from config.env import (
    database_from_url,
    env_bool,
    env_int,
    env_list,
    env_networks,
    env_str,
    env_url,
    oidc_provider,
)
from config.env_oauth import oauth_settings

SYSLOG_FACILITIES = {
    **{"kern": 0, "user": 1, "daemon": 3, "auth": 4, "syslog": 5, "authpriv": 10},
    **{f"local{n}": 16 + n for n in range(8)},
}
BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY: must be set when DEBUG is false")
    SECRET_KEY = "quiver-insecure-development-key"  # noqa: S105 - DEBUG only
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

# Cookies never reach scripts; page scripts read the CSRF token from the page.
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = True
# A refused check is JSON where the endpoint answers JSON (config.errors).
CSRF_FAILURE_VIEW = "config.errors.csrf_failure"
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# QUIVER_HTTPS=true when people reach Quiver over HTTPS (a TLS proxy in front that
# sets X-Forwarded-Proto): secure cookies, redirects to https, HSTS. Off for
# `make run` on http://127.0.0.1, where those would lock the browser out.
QUIVER_HTTPS = env_bool("QUIVER_HTTPS", False)
# The proxies (IPs or CIDRs) whose X-Forwarded-For names the client: sign-in and
# unknown-key limits count per client address (config.http.client_address). A peer
# not listed is the client, whatever header it sends.
QUIVER_TRUSTED_PROXIES = env_networks("QUIVER_TRUSTED_PROXIES")
if QUIVER_HTTPS:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = True
    # Container health checks and scrapers inside the network speak http.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^metrics$"]
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_HSTS_SECONDS = env_int("QUIVER_HSTS_SECONDS", 31_536_000, minimum=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "identity",
    "jobs",
    "catalog",
    "selection",
    "audit",
    "sources",
    "calls",
    "learning",
    "telemetry",
    "notify",
    "sso",
    "compliance",
    "oauth",
    "vault",
]

MIDDLEWARE = [
    # Outermost: every answer counts in the metrics, refusals before a view too.
    "telemetry.middleware.RequestMetricsMiddleware",
    "config.middleware.BodySizeLimitMiddleware",
    "config.middleware.RequestIdMiddleware",
    "config.middleware.UnstorableTextMiddleware",
    "config.middleware.DatabaseUnavailableMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "config.csp.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "catalog.navigation.navigation",
            ]
        },
    }
]

DATABASES = {
    "default": database_from_url(
        "DATABASE_URL",
        env_str("DATABASE_URL", "postgresql://postgres@localhost:5432/quiver"),
    )
}
# Parallel test runs against one server each name their own test database.
DATABASES["default"]["TEST"] = {"NAME": env_str("QUIVER_TEST_DB_NAME", "test_quiver")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
# /mcp as an OAuth 2.1 protected resource, Quiver as its authorization server
# (on by default) and the company's as another (config.env_oauth, oauth/).
QUIVER_OAUTH = oauth_settings()
LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/login/"
# Passwords are checked against the sign-in policy (off, but for the break-glass
# admin, when password sign-in is turned off); single sign-on signs people in
# through its callback only (sso.backends).
AUTHENTICATION_BACKENDS = [
    "sso.backends.PasswordPolicyBackend",
    "sso.backends.SingleSignOnBackend",
]
# Single sign-on (sso/, docs/how-to/single-sign-on.md): OpenID Connect against the
# provider at QUIVER_OIDC_ISSUER; off (None) while it is unset, so `make run`
# needs no identity provider.
QUIVER_OIDC = oidc_provider()
# Password sign-in; false leaves it to the break-glass admin alone (named here:
# a username), as the console's switch does.
QUIVER_PASSWORD_LOGIN = env_bool("QUIVER_PASSWORD_LOGIN", True)
QUIVER_BREAK_GLASS_ADMIN = env_str("QUIVER_BREAK_GLASS_ADMIN").strip()
if not QUIVER_PASSWORD_LOGIN and QUIVER_OIDC is None:
    raise ImproperlyConfigured(
        "QUIVER_PASSWORD_LOGIN: false needs single sign-on (QUIVER_OIDC_ISSUER), "
        "or nobody but the break-glass admin could sign in"
    )

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"
        if not DEBUG
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = True

# Request bodies over this size get 413 (imports of whole catalogs fit well inside).
QUIVER_MAX_BODY_BYTES = env_int("QUIVER_MAX_BODY_BYTES", 20 * 1024 * 1024, minimum=1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = QUIVER_MAX_BODY_BYTES
FILE_UPLOAD_MAX_MEMORY_SIZE = QUIVER_MAX_BODY_BYTES

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # An API key, or an OAuth access token whose scope names the API.
        "oauth.auth.BearerAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "config.params.BoundedPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "config.api_errors.exception_handler",
    # Depth-limited JSON; no NUL or lone surrogate in any body (config.parsers).
    "DEFAULT_PARSER_CLASSES": [
        "config.parsers.SafeJSONParser",
        "config.parsers.SafeFormParser",
        "config.parsers.SafeMultiPartParser",
    ],
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    # ?format= names a provider format in this API, not a renderer.
    "URL_FORMAT_OVERRIDE": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Quiver API",
    "DESCRIPTION": "Tool catalog and tool selection for LLM agents.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Several models have a "status" field with choices of their own.
    "ENUM_NAME_OVERRIDES": {
        "ApprovalStatusEnum": "calls.models.ApprovalStatus",
        "ToolStatusEnum": "catalog.choices.ToolStatus",
        "LabelStatusEnum": "learning.models.LabelStatus",
        "SourceStatusEnum": "sources.models.SourceStatus",
        "SourceKindEnum": "sources.models.SourceKind",
        "WebhookEventEnum": "notify.choices.WebhookEvent",
        "WebhookFormatEnum": "notify.choices.WebhookFormat",
        "ReviewStatusEnum": [("accepted", "Accepted"), ("rejected", "Rejected")],
        "StateEnum": "jobs.choices.JobState",  # a job's and an evaluation's
        "ToolReviewKindEnum": "catalog.choices.ReviewKind",
        "ToolReviewStateEnum": "catalog.choices.ReviewState",
    },
}

# Selections a minute per API client (batch items count one each; /validate and
# imports count one); ApiClient.rate_limit_per_minute overrides it; 0 = no limit.
QUIVER_RATE_LIMIT_PER_MINUTE = env_int("QUIVER_RATE_LIMIT_PER_MINUTE", 1200, minimum=0)

CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "redis://127.0.0.1:6379/0")
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "quiver"
# Evaluations and learns (minutes of CPU each) have a queue and workers of their
# own, so imports, syncs, embeddings and sweeps never wait behind them: `make run`
# and docker compose start a worker for each queue (README, Learning).
CELERY_TASK_ROUTES = {
    "learning.tasks.run_evaluation": {"queue": "learning"},
    "learning.learn_tasks.run_learn": {"queue": "learning"},
}
CELERY_BROKER_TRANSPORT_OPTIONS = {
    # A task whose worker died is handed out again after this many seconds.
    "visibility_timeout": env_int("QUIVER_VISIBILITY_TIMEOUT", 300, minimum=5),
}
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Fail fast when the broker is down (the job row is the durable queue; see
# jobs/services.py): a write never waits long on a publish.
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 2,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.5,
}
CELERY_BROKER_TRANSPORT_OPTIONS["socket_connect_timeout"] = 2
# A running job beats every third of this; one whose heartbeat is older is orphaned.
QUIVER_JOB_LEASE_S = env_int("QUIVER_JOB_LEASE_S", 6, minimum=2)
# Every worker sends queued jobs and pending embeddings older than this again.
QUIVER_SWEEP_S = env_int("QUIVER_SWEEP_S", 10, minimum=1, maximum=3600)
# Re-learn a catalog with an applied learnt model when its labels or
# tools change (learning.services.learn.relearn_on_change; off by default).
QUIVER_RELEARN_ON_CHANGE = env_bool("QUIVER_RELEARN_ON_CHANGE", False)
# Evaluations and learns (learning.services.stalled): one still queued after
# RESEND_S is sent again; one running without progress for STALE_S is failed.
QUIVER_LEARNING_RESEND_S = env_int(
    "QUIVER_LEARNING_RESEND_S", 60, minimum=5, maximum=86_400
)
QUIVER_LEARNING_STALE_S = env_int(
    "QUIVER_LEARNING_STALE_S", 900, minimum=60, maximum=7 * 86_400
)
# Evaluations and learns queued or running at once (learning.services.limits):
# per caller (a person or a key) across catalogs, and per catalog; past either
# a new one is a 429 naming the limit.
QUIVER_LEARNING_RUNS_PER_CALLER = env_int(
    "QUIVER_LEARNING_RUNS_PER_CALLER", 2, minimum=1, maximum=1000
)
QUIVER_LEARNING_RUNS_PER_CATALOG = env_int(
    "QUIVER_LEARNING_RUNS_PER_CATALOG", 3, minimum=1, maximum=1000
)

QUIVER_EMBEDDINGS = {
    "BACKEND": env_str("QUIVER_EMBEDDING_BACKEND", "local"),
    "MODEL": env_str("QUIVER_EMBEDDING_MODEL", "all-MiniLM-L6-v2"),
    "BASE_URL": env_str("QUIVER_EMBEDDING_BASE_URL", ""),
    "API_KEY": env_str("QUIVER_EMBEDDING_API_KEY", ""),
    # Threads per process for the local model. One each suits a worker running two
    # processes on two cores; more only fight over the same cores.
    "THREADS": env_int("QUIVER_EMBEDDING_THREADS", 1, minimum=1, maximum=64),
    # How the local model runs: onnxruntime (graphs built from the weights on first
    # use, int8 queries) or the pure-numpy forward pass.
    "ENGINE": env_str("QUIVER_EMBEDDING_ENGINE", "onnx"),
}
if QUIVER_EMBEDDINGS["BACKEND"] not in ("local", "openai"):
    raise ImproperlyConfigured("QUIVER_EMBEDDING_BACKEND: expected local or openai")
if QUIVER_EMBEDDINGS["ENGINE"] not in ("onnx", "numpy"):
    raise ImproperlyConfigured("QUIVER_EMBEDDING_ENGINE: expected onnx or numpy")
# A request's sentences are embedded by the static query encoder when one has
# been built (manage.py build_query_encoder); false: by the full model.
QUIVER_STATIC_SENTENCES = env_bool("QUIVER_STATIC_SENTENCES", True)
# After an import the worker trains that encoder when none exists or the catalog
# has much outgrown it (catalog.tasks.build_query_encoder_if_due).
QUIVER_QUERY_ENCODER_AUTO = env_bool("QUIVER_QUERY_ENCODER_AUTO", True)
# Where that encoder is kept: the state directory's models/ (every process must see
# it), or a table in Postgres that each process copies into its own state
# directory (catalog.query_encoder_store: processes that share no volume).
QUIVER_QUERY_ENCODER_STORE = env_str("QUIVER_QUERY_ENCODER_STORE", "file")
if QUIVER_QUERY_ENCODER_STORE not in ("file", "postgres"):
    raise ImproperlyConfigured("QUIVER_QUERY_ENCODER_STORE: expected file or postgres")
QUIVER_EMBED_BATCH = env_int("QUIVER_EMBED_BATCH", 64, minimum=1, maximum=2048)
# An import never gets more than this many tools ahead of their embeddings: past
# it, the import process embeds a batch itself before going on, so the catalog is
# searchable by meaning in step with the import (0 turns this off).
QUIVER_IMPORT_EMBED_LAG = env_int(
    "QUIVER_IMPORT_EMBED_LAG", 0, minimum=0, maximum=1_000_000
)
# An import writes this many items per transaction (batched inserts, updates and
# change records); 0 writes one tool per transaction (the one-by-one path).
QUIVER_IMPORT_CHUNK = env_int("QUIVER_IMPORT_CHUNK", 250, minimum=0, maximum=5000)

# HNSW search breadth; see bench/README.md for the recall/latency trade-off.
QUIVER_EF_SEARCH = env_int("QUIVER_EF_SEARCH", 100, minimum=1, maximum=1000)
# Catalogs up to this many tools keep their vectors in the snapshot and are
# searched in process (exact cosine, no database round trip); larger ones use
# pgvector HNSW (bench/README.md).
QUIVER_INPROCESS_VECTORS_MAX = env_int(
    "QUIVER_INPROCESS_VECTORS_MAX", 20_000, minimum=0, maximum=10_000_000
)
# After an edit, catalogs up to this many tools rebuild their lexical index
# inline (exact at once); larger ones patch the snapshot and rebuild the index in
# a background thread (policy changes such as a disable apply at once anyway).
QUIVER_SNAPSHOT_INLINE_INDEX_MAX = env_int(
    "QUIVER_SNAPSHOT_INLINE_INDEX_MAX", 1_000, minimum=0, maximum=10_000_000
)
# Larger catalogs lay the changed tools over the last exact index at once and
# rebuild it exactly this many seconds after the first edit (later edits meanwhile
# are folded in): the rebuild's fork stalls the process for a moment.
# A forked index builder that sends nothing within this many seconds (a lock held
# at the fork) is killed and the index is built in the web process instead.
QUIVER_SNAPSHOT_INDEX_CHILD_TIMEOUT_S = env_int(
    "QUIVER_SNAPSHOT_INDEX_CHILD_TIMEOUT_S", 120, minimum=1, maximum=86_400
)
QUIVER_SNAPSHOT_INDEX_REBUILD_DELAY = env_int(
    "QUIVER_SNAPSHOT_INDEX_REBUILD_DELAY", 10, minimum=0, maximum=86_400
)
# What one process may keep for its catalogs (snapshots with their indexes,
# vectors and learnt signals; the answer and definition caches), in MB; past it
# the least recently used go (selection.adapters.kept). A web worker holds a few
# hundred MB before any catalog (the model, Django): with the default it stays
# near 600 MB in all (bench/README.md, "Many tenants").
QUIVER_MEMORY_BUDGET_MB = env_int(
    "QUIVER_MEMORY_BUDGET_MB", 320, minimum=16, maximum=1_048_576
)

# The audit chain's HMAC key lives outside the database (audit/keyring.py). Without
# QUIVER_AUDIT_KEY(_FILE) it is derived from SECRET_KEY, which also lives outside it.
# The key file is re-read when it changes (audit_rotate_key rewrites it), so the
# literal QUIVER_AUDIT_KEY and the file's path are kept apart here.
QUIVER_AUDIT_KEY = os.environ.get("QUIVER_AUDIT_KEY", "")
QUIVER_AUDIT_KEY_FILE = os.environ.get("QUIVER_AUDIT_KEY_FILE", "")
if QUIVER_AUDIT_KEY_FILE and not env_str("QUIVER_AUDIT_KEY"):
    raise ImproperlyConfigured("QUIVER_AUDIT_KEY_FILE: the file is empty")
QUIVER_STATE_DIR = Path(env_str("QUIVER_STATE_DIR", str(BASE_DIR / ".quiver")))
# Retired audit keys, one per line: rows and checkpoints they signed still verify.
QUIVER_AUDIT_OLD_KEYS_FILE = Path(
    env_str("QUIVER_AUDIT_OLD_KEYS_FILE", str(QUIVER_STATE_DIR / "audit_old_keys"))
)
QUIVER_AUDIT_CHECKPOINT_FILE = Path(
    env_str(
        "QUIVER_AUDIT_CHECKPOINT_FILE",
        str(QUIVER_STATE_DIR / "audit-checkpoints.jsonl"),
    )
)
# Where the signed checkpoint lines are kept (audit.checkpoint_store): the file
# above (one host, or a volume every process mounts), or a table in Postgres, for
# processes that share nothing but the database (a cluster). Either way the
# sinks below keep second copies out of the database owner's reach.
QUIVER_AUDIT_CHECKPOINT_STORE = env_str("QUIVER_AUDIT_CHECKPOINT_STORE", "file")
if QUIVER_AUDIT_CHECKPOINT_STORE not in ("file", "postgres"):
    raise ImproperlyConfigured(
        "QUIVER_AUDIT_CHECKPOINT_STORE: expected file or postgres"
    )
QUIVER_AUDIT_CHECKPOINT_URL = env_str("QUIVER_AUDIT_CHECKPOINT_URL")
# Second copies of every checkpoint line (audit/sinks/): syslog and an S3 bucket.
QUIVER_AUDIT_CHECKPOINT_SYSLOG = env_url(
    "QUIVER_AUDIT_CHECKPOINT_SYSLOG", ("udp", "tcp", "unix")
)
QUIVER_AUDIT_CHECKPOINT_SYSLOG_FACILITY = env_str(
    "QUIVER_AUDIT_CHECKPOINT_SYSLOG_FACILITY", "local0"
)
if QUIVER_AUDIT_CHECKPOINT_SYSLOG_FACILITY not in SYSLOG_FACILITIES:
    raise ImproperlyConfigured(
        "QUIVER_AUDIT_CHECKPOINT_SYSLOG_FACILITY: must be one of "
        + ", ".join(SYSLOG_FACILITIES)
    )
QUIVER_AUDIT_CHECKPOINT_S3 = env_url("QUIVER_AUDIT_CHECKPOINT_S3", ("s3",))
QUIVER_AUDIT_CHECKPOINT_S3_REGION = env_str(
    "QUIVER_AUDIT_CHECKPOINT_S3_REGION", "us-east-1"
)
QUIVER_AUDIT_CHECKPOINT_S3_ENDPOINT = (
    env_url("QUIVER_AUDIT_CHECKPOINT_S3_ENDPOINT", ("https", "http"))
    or f"https://s3.{QUIVER_AUDIT_CHECKPOINT_S3_REGION}.amazonaws.com"
)
QUIVER_AUDIT_CHECKPOINT_S3_ACCESS_KEY = env_str(
    "QUIVER_AUDIT_CHECKPOINT_S3_ACCESS_KEY", os.environ.get("AWS_ACCESS_KEY_ID", "")
)
QUIVER_AUDIT_CHECKPOINT_S3_SECRET_KEY = env_str(
    "QUIVER_AUDIT_CHECKPOINT_S3_SECRET_KEY",
    os.environ.get("AWS_SECRET_ACCESS_KEY", ""),
)
if QUIVER_AUDIT_CHECKPOINT_S3 and not (
    QUIVER_AUDIT_CHECKPOINT_S3_ACCESS_KEY and QUIVER_AUDIT_CHECKPOINT_S3_SECRET_KEY
):
    raise ImproperlyConfigured(
        "QUIVER_AUDIT_CHECKPOINT_S3_ACCESS_KEY, QUIVER_AUDIT_CHECKPOINT_S3_SECRET_KEY: "
        "must be set (or AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) with the S3 sink"
    )
# Object lock (compliance mode) for this many days on each object; 0: none, the
# object is still written only if absent (If-None-Match: *).
QUIVER_AUDIT_CHECKPOINT_S3_LOCK_DAYS = env_int(
    "QUIVER_AUDIT_CHECKPOINT_S3_LOCK_DAYS", 0, minimum=0, maximum=36_500
)
QUIVER_AUDIT_SINK_TIMEOUT_S = env_int(
    "QUIVER_AUDIT_SINK_TIMEOUT_S", 5, minimum=1, maximum=120
)
QUIVER_AUDIT_CHECKPOINT_EVERY = env_int(
    "QUIVER_AUDIT_CHECKPOINT_EVERY", 1000, minimum=1, maximum=10_000_000
)
QUIVER_AUDIT_CHECKPOINT_S = env_int(
    "QUIVER_AUDIT_CHECKPOINT_S", 60, minimum=1, maximum=86_400
)
# A /select answer's audit row is sent before the answer is rendered, on a
# connection of its own, and the answer waits for its COMMIT before it is sent
# (audit/writer.py). Off: the row is written on the request's connection first.
QUIVER_AUDIT_SEND_EARLY = env_bool("QUIVER_AUDIT_SEND_EARLY", True)
QUIVER_AUDIT_SEAL_INTERVAL_S = env_int(
    "QUIVER_AUDIT_SEAL_INTERVAL_S", 2, minimum=1, maximum=3600
)
# Every Celery worker runs the sealer in its main process (the chain lock makes
# them take turns); false where a process of its own does (audit_seal --every).
QUIVER_AUDIT_SEALER_IN_WORKERS = env_bool("QUIVER_AUDIT_SEALER_IN_WORKERS", True)
QUIVER_AUDIT_SEAL_MAX_DELAY_S = env_int(
    "QUIVER_AUDIT_SEAL_MAX_DELAY_S", 300, minimum=5, maximum=86_400
)
QUIVER_AUDIT_RETENTION_DAYS = env_int(
    "QUIVER_AUDIT_RETENTION_DAYS", 400, minimum=1, maximum=100_000
)

# Pending approvals past their expiry become "expired" (calls/tasks.py), checked
# this often by every worker.
QUIVER_APPROVAL_EXPIRY_INTERVAL_S = env_int(
    "QUIVER_APPROVAL_EXPIRY_INTERVAL_S", 30, minimum=1, maximum=3600
)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "one_line_403": {"()": "config.logfilters.OneLineForbidden"},
        "no_values": {"()": "config.logfilters.NoValuesFromTheDatabase"},
    },
    # Logs never quote what a caller sent: no database error's statement or values.
    "handlers": {
        "console": {"class": "logging.StreamHandler", "filters": ["no_values"]}
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    # A refused request is one warning line, not a traceback.
    "loggers": {"django.request": {"filters": ["one_line_403"]}},
}
# Labels and evaluations (learning): how far back labels are proposed from use, and
# the accepted labels one evaluation runs.
QUIVER_LABEL_PROPOSAL_DAYS = env_int("QUIVER_LABEL_PROPOSAL_DAYS", 30, minimum=1)
QUIVER_EVALUATION_MAX_LABELS = env_int(
    "QUIVER_EVALUATION_MAX_LABELS", 20_000, minimum=1
)

# Calls through Quiver: how long a person's approval may wait, and
# whether tool_call audit rows keep only the arguments' hash (not the arguments).
QUIVER_APPROVAL_TTL_SECONDS = env_int(
    "QUIVER_APPROVAL_TTL_SECONDS", 3600, minimum=60, maximum=30 * 86_400
)
QUIVER_CALL_ARGUMENTS_HASH_ONLY = env_bool("QUIVER_CALL_ARGUMENTS_HASH_ONLY", False)

# Sources, calls, notifications and metrics: config/settings_outside.py.
from config.settings_outside import *  # noqa: E402, F403
