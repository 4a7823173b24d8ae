"""Selection speed: latency of POST /api/v1/select at 200, 4,076 and 100,000 tools.

Run: ``make bench-speed`` (= ``.venv/bin/python -m config.devstack test --
.venv/bin/python bench/speed.py``), which provides DATABASE_URL (embedded Postgres +
pgvector, database "quiver") and CELERY_BROKER_URL (a fresh Redis).

Options: ``--sizes 200,4076,100000``, ``--scorers default,keyword,bm25f,embedding,
hybrid,ensemble`` (``default`` sends no scorer, so the catalog's default is used),
``--requests N`` (300), ``--warmup N`` (10), ``--keep`` (leave the catalogs),
``--py-spy PATH`` (profile the web worker in an extra pass), ``--no-vector-cache``.

Catalogs ``bench-speed-<size>``: 200 = MetaTool's 199 tools, 4076 = Seal-Tools, any
other size <= 4,076 = the first Seal-Tools tools, larger sizes = Seal-Tools repeated
as ``<name>_v<k>`` with a domain word appended to the description (parameters
kept). Tool rows are bulk-written with the fields the services set (content hash,
provider name, prompt tokens), ToolEmbedding rows by one binary COPY per 5,000
tools; each distinct text is embedded once
with the configured backend and a copy reuses its base vector, perturbed
(normalise(v + 0.05 g / sqrt(dim)), g ~ N(0, I), fixed seed). Then the catalog's
partial HNSW index is built (ensure_hnsw_index), the model activated and the
version bumped. Document vectors are cached under ``.quiver/bench-cache/`` keyed by
the model and the texts (cheap to keep; everything else is rebuilt every run).

Measured per size and scorer:

* HTTP: a real ``gunicorn --workers 1 --threads 1`` serving the app with this
  process's environment; ``--warmup`` requests with other queries (they build the
  snapshot and load the model), then ``--requests`` sequential requests with
  distinct queries (query-embedding cache cold) over one persistent httpx.Client.
  Client-measured p50/p95/p99/mean, the answers' stats.latency_ms and
  stats.engine_ms, and the CPU time the web worker and its Postgres backend spent
  per request (from /proc; far less sensitive to a busy machine than wall time).
* HTTP p50 by query length (words): the query embedding's cost grows with it.
* In process, the same queries (caches cleared first), wall-clock and CPU time:
  ``select_tools`` whole, and its parts alone: the query embedding
  (``embed_query``, cold), the pgvector pool query (``semantic_pool`` with the
  embedding cached), the engine (``select`` on the snapshot with the precomputed
  pool), the tool definitions query, the audit write (``record_event``), the warm
  snapshot lookup, and what the view does before: bearer-key authentication
  (lookup + ``last_used`` update) and the catalog lookup. Also the time to build
  the snapshot from scratch and what it adds to a full garbage collection.
* With ``--py-spy``: an extra pass of ``--profile-requests`` (100) requests while
  py-spy samples the web worker (idle frames included, so database and fsync waits
  count); the table gives each part's share of the request samples. py-spy is not
  a project dependency: install it anywhere (e.g. ``python3 -m venv /tmp/spy &&
  /tmp/spy/bin/pip install py-spy``) and pass its path.

Everything it creates is removed at the end (unless ``--keep``), and leftovers of an
earlier run are removed at the start. Progress goes to stderr, tables to stdout.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import hashlib
import logging
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DEBUG", "true")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import django  # noqa: E402

from bench._data import read_jsonl  # noqa: E402

django.setup()

import httpx  # noqa: E402
import numpy as np  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.db.models import F  # noqa: E402
from django.test import RequestFactory  # noqa: E402
from django.utils import timezone  # noqa: E402

from audit.choices import EventType  # noqa: E402
from audit.services import record_event  # noqa: E402
from catalog.choices import EmbeddingStatus  # noqa: E402
from catalog.embedding_text import embedding_text, text_hash  # noqa: E402
from catalog.formats import estimate_prompt_tokens, export_tool  # noqa: E402
from catalog.models import Catalog, Tool, ToolChange, ToolEmbedding  # noqa: E402
from catalog.names import reclaim  # noqa: E402
from catalog.naming import assign_provider_names  # noqa: E402
from catalog.services.catalogs import create_catalog  # noqa: E402
from catalog.services.embeddings import (  # noqa: E402
    current_backend,
    ensure_hnsw_index,
    hnsw_index_name,
)
from catalog.services.tools import content_hash, tool_to_spec  # noqa: E402
from catalog.spec import ToolSpec  # noqa: E402
from identity.access import access_for  # noqa: E402
from identity.auth import ApiKeyAuthentication  # noqa: E402
from identity.models import ApiClient  # noqa: E402
from identity.services.clients import create_api_client  # noqa: E402
from selection.adapters import pgvector as semantic  # noqa: E402
from selection.adapters import snapshots  # noqa: E402
from selection.adapters.kept import STORE  # noqa: E402
from selection.adapters.snapshots import get_snapshot  # noqa: E402
from selection.answers import SelectionAnswer  # noqa: E402
from selection.api.serializers import SelectInputSerializer  # noqa: E402
from selection.engine.engine import select  # noqa: E402
from selection.engine.normalize import normalize  # noqa: E402
from selection.engine.settings import EngineSettings  # noqa: E402
from selection.engine.types import SelectionRequest  # noqa: E402
from selection.requests import build_request  # noqa: E402
from selection.services import select as services  # noqa: E402

DATA_DIR = Path(
    os.environ.get("QUIVER_BENCH_DATA", ROOT.parent / "shared" / "bench" / "data")
)
CACHE_DIR = ROOT / ".quiver" / "bench-cache"
PREFIX = "bench-speed"
CLIENT_NAME = f"{PREFIX}-agent"
WSGI_APP = "config.wsgi:application"
DEFAULT_SIZES = (200, 4076, 100_000)
SEALTOOLS_SIZE = 4076
METATOOL_SIZE = 200
CHUNK = 5000
NOISE = 0.05
SEED = 20240601
SCORER_CHOICES = ("default", "keyword", "bm25f", "embedding", "hybrid", "ensemble")
SEMANTIC = services.SEMANTIC_SCORERS
# The bench catalogs have no selection settings row, so the engine defaults apply.
DEFAULT_SCORER = EngineSettings().default_scorer
DOMAIN_WORDS = (
    "retail", "healthcare", "finance", "education", "logistics", "travel",
    "energy", "media", "legal", "gaming", "agriculture", "telecom", "insurance",
    "manufacturing", "hospitality", "real estate", "automotive", "government",
    "aviation", "biotech", "security", "sports", "fashion", "construction",
)  # fmt: skip
# (catalog size, statistic, limit in ms): over HTTP, default scorer, cache cold.
TARGETS = ((4076, "p50", 15.0), (4076, "p95", 30.0), (100_000, "p95", 60.0))
CLOCK_TICK = os.sysconf("SC_CLK_TCK")
STARTED = time.monotonic()


def say(message: str) -> None:
    """A progress line on stderr (the tables go to stdout)."""
    elapsed = time.monotonic() - STARTED
    print(f"[speed {elapsed:7.1f}s] {message}", file=sys.stderr, flush=True)


# --- data -----------------------------------------------------------------------------


def load_specs(dataset: str) -> list[ToolSpec]:
    """The data set's tools; MetaTool's schema-less plugins are read-only tools."""
    specs = []
    for row in read_jsonl(DATA_DIR / dataset / "tools.jsonl"):
        extra: dict[str, Any] = {}
        if row.get("parameters") is None:
            extra = {"allow_no_schema": True, "no_schema_mode": "read-only"}
        specs.append(
            ToolSpec(
                name=row["name"],
                description=row.get("description") or "",
                parameters=row.get("parameters"),
                title=row.get("name_for_human") or "",
                category=row.get("category") or "",
                tags=list(row.get("tags") or []),
                **extra,
            )
        )
    return specs


def load_queries(dataset: str) -> list[str]:
    return [
        row["query"] for row in read_jsonl(DATA_DIR / dataset / "queries_dev.jsonl")
    ]


def query_pool(primary: str) -> list[str]:
    """Distinct (after the cache's normalisation) queries, the size's data set first,
    each data set shuffled (fixed seed) so every slice has the same mix of short and
    long queries (a query's embedding cost grows with its length)."""
    other = "sealtools" if primary == "metatool" else "metatool"
    rng = random.Random(SEED)
    first, second = load_queries(primary), load_queries(other)
    rng.shuffle(first)
    rng.shuffle(second)
    seen: set[str] = set()
    pool = []
    for text in first + second:
        key = semantic.normalise_query(text)
        if key and key not in seen:
            seen.add(key)
            pool.append(text)
    return pool


def document_vectors(dataset: str, texts: list[str], use_cache: bool) -> np.ndarray:
    """One vector per text from the configured backend (cached by model + texts)."""
    backend = current_backend()
    digest = hashlib.sha256(
        "\0".join([backend.model_id, *texts]).encode("utf-8")
    ).hexdigest()[:20]
    path = CACHE_DIR / f"speed-{dataset}-{digest}.npy"
    if use_cache and path.exists():
        vectors = np.load(path)
        if vectors.shape == (len(texts), int(backend.dimension)):
            say(f"{dataset}: {len(texts)} document vectors from {path.name}")
            return vectors
    say(f"{dataset}: embedding {len(texts)} tool texts with {backend.model_id} ...")
    started = time.perf_counter()
    vectors = np.asarray(backend.embed_documents(texts), dtype=np.float32)
    say(f"{dataset}: embedded in {time.perf_counter() - started:.1f}s")
    if use_cache:
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        np.save(path, vectors)
    return vectors


@dataclass
class Source:
    """Where a size's tools come from: base specs, their texts and vectors."""

    dataset: str
    specs: list[ToolSpec]
    texts: list[str]
    vectors: np.ndarray


_sources: dict[str, Source] = {}


def source(dataset: str, use_cache: bool) -> Source:
    if dataset not in _sources:
        specs = load_specs(dataset)
        texts = [embedding_text(spec) for spec in specs]
        vectors = document_vectors(dataset, texts, use_cache)
        _sources[dataset] = Source(dataset, specs, texts, vectors)
    return _sources[dataset]


def dataset_for(size: int) -> str:
    return "metatool" if size == METATOOL_SIZE else "sealtools"


def plan(src: Source, size: int) -> Iterator[tuple[ToolSpec, int, int]]:
    """(spec, index of its base tool, copy number) for each of the size's tools."""
    base = src.specs
    count = min(size, len(base)) if size <= SEALTOOLS_SIZE else size
    for i in range(count):
        copy, j = divmod(i, len(base))
        spec = base[j]
        if copy:
            word = DOMAIN_WORDS[(j + copy) % len(DOMAIN_WORDS)]
            spec = replace(
                spec,
                name=f"{spec.name}_v{copy}",
                description=f"{spec.description.rstrip()} ({word})",
            )
        yield spec, j, copy


# --- catalogs -------------------------------------------------------------------------

_TOOL_FIELDS = [n for n in ToolSpec.field_names() if n not in ("name", "provider_name")]


def tool_row(catalog: Catalog, spec: ToolSpec, provider_name: str) -> Tool:
    """The Tool create_tool would write (minus its change record and embed task)."""
    tool = Tool(catalog=catalog, name=spec.name, provider_name=provider_name)
    for name in _TOOL_FIELDS:
        setattr(tool, name, getattr(spec, name))
    tool.prompt_tokens = estimate_prompt_tokens(spec)
    tool.content_hash = content_hash(spec)
    tool.embedding_status = EmbeddingStatus.READY
    tool.embedding_error = ""
    return tool


def chunks(items: Iterator[Any], size: int) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


@dataclass
class Built:
    size: int
    catalog: Catalog
    label: str
    tools: int
    rows_s: float
    index_s: float
    snapshot_s: float | None = None
    gc_ms: float | None = None


def build_catalog(size: int, use_cache: bool) -> Built:
    src = source(dataset_for(size), use_cache)
    backend = current_backend()
    model_id, dim = backend.model_id, int(backend.dimension)
    slug = f"{PREFIX}-{size}"
    catalog = create_catalog(slug, f"Bench speed {size}", "bench/speed.py; disposable")
    rng = np.random.default_rng(SEED)
    started = time.perf_counter()
    items = list(plan(src, size))
    names = assign_provider_names([spec.name for spec, _, _ in items], set())
    written = 0
    for batch in chunks(iter(items), CHUNK):
        tools = [tool_row(catalog, spec, names[spec.name]) for spec, _, _ in batch]
        Tool.objects.bulk_create(tools, batch_size=1000)
        vectors = np.stack([src.vectors[j] for _, j, _ in batch])
        copies = np.array([copy > 0 for _, _, copy in batch])
        noise = rng.standard_normal(vectors.shape).astype(np.float32)
        vectors = np.where(
            copies[:, None], vectors + NOISE * noise / np.sqrt(dim), vectors
        )
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        hashes = [
            text_hash(src.texts[j] if copy == 0 else embedding_text(spec), model_id)
            for spec, j, copy in batch
        ]
        copy_embeddings(catalog.pk, model_id, [t.pk for t in tools], hashes, vectors)
        written += len(batch)
        if len(items) > CHUNK:
            say(f"{slug}: {written}/{len(items)} tools and vectors written")
    reclaim(catalog.pk)  # the names the rows hold (catalog.names), as a write's
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {Tool._meta.db_table}")
        cursor.execute(f"ANALYZE {ToolEmbedding._meta.db_table}")
    rows_s = time.perf_counter() - started
    say(f"{slug}: {len(items)} tools written in {rows_s:.1f}s; building HNSW index ...")
    started = time.perf_counter()
    with connection.cursor() as cursor:
        # Bench setup only: a graph that fits maintenance_work_mem builds much faster.
        cursor.execute("SET maintenance_work_mem = '1GB'")
        try:
            ensure_hnsw_index(model_id, dim, catalog.pk)
        finally:
            cursor.execute("RESET maintenance_work_mem")
    index_s = time.perf_counter() - started
    say(f"{slug}: HNSW index built in {index_s:.1f}s")
    Catalog.objects.filter(pk=catalog.pk).update(
        active_embedding_model=model_id,
        version=F("version") + 1,
        updated=timezone.now(),
    )
    catalog.refresh_from_db()
    label = {
        "metatool": "MetaTool",
        "sealtools": "Seal-Tools" if size <= SEALTOOLS_SIZE else "synthetic",
    }[src.dataset]
    return Built(size, catalog, label, len(items), rows_s, index_s)


_PG_EPOCH = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)


def copy_embeddings(
    catalog_id: int,
    model_id: str,
    tool_ids: list[int],
    hashes: list[str],
    vectors: np.ndarray,
) -> None:
    """Write ToolEmbedding rows with one binary COPY (the ORM's text formatting of
    100,000 x 384 floats takes minutes). Same columns bulk_create would write."""
    now = timezone.now()
    micros = (now - _PG_EPOCH) // dt.timedelta(microseconds=1)
    dim = vectors.shape[1]
    fixed_head = struct.pack(">h", 7)
    model = model_id.encode()
    big = vectors.astype(">f4")
    parts = [b"PGCOPY\n\xff\r\n\x00", struct.pack(">ii", 0, 0)]
    for tool_id, digest, vector in zip(tool_ids, hashes, big, strict=True):
        hash_bytes = digest.encode()
        parts += [
            fixed_head,
            struct.pack(">iq", 8, tool_id),
            struct.pack(">iq", 8, catalog_id),
            struct.pack(">i", len(model)),
            model,
            struct.pack(">ii", 4, dim),
            struct.pack(">i", len(hash_bytes)),
            hash_bytes,
            struct.pack(">ihh", 4 + 4 * dim, dim, 0),
            vector.tobytes(),
            struct.pack(">iq", 8, micros),
        ]
    parts.append(struct.pack(">h", -1))
    columns = "tool_id, catalog_id, model_id, dimension, text_hash, embedding, created"
    db_table = ToolEmbedding._meta.db_table
    sql = f"COPY {db_table} ({columns}) FROM STDIN WITH (FORMAT BINARY)"
    connection.ensure_connection()
    with connection.connection.cursor() as cursor, cursor.copy(sql) as copy:
        copy.write(b"".join(parts))


def drop_catalog(catalog: Catalog) -> None:
    """Delete a bench catalog: HNSW indexes and vectors by SQL, then the rest."""
    models = set(
        ToolEmbedding.objects.filter(catalog=catalog)
        .values_list("model_id", flat=True)
        .distinct()
    ) | {current_backend().model_id}
    with transaction.atomic(), connection.cursor() as cursor:
        for model_id in models:
            cursor.execute(
                f"DROP INDEX IF EXISTS {hnsw_index_name(model_id, catalog.pk)}"
            )
        cursor.execute(
            f"DELETE FROM {ToolEmbedding._meta.db_table} WHERE catalog_id = %s",
            [catalog.pk],
        )
        if not ToolChange.objects.filter(catalog=catalog).exists():
            cursor.execute(
                f"DELETE FROM {Tool._meta.db_table} WHERE catalog_id = %s", [catalog.pk]
            )
        catalog.delete()


def clean_up() -> None:
    for catalog in Catalog.objects.filter(slug__startswith=f"{PREFIX}-"):
        say(f"removing {catalog.slug}")
        drop_catalog(catalog)
    for client in ApiClient.objects.filter(name__startswith=PREFIX).select_related(
        "user"
    ):
        client.user.delete()


# --- the web server -------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU time of a process, from /proc (None if it is gone)."""
    if pid is None:
        return None
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICK


class Server:
    """gunicorn serving config.wsgi (or ``app``) with this process's environment."""

    def __init__(
        self, log_dir: Path, env: dict[str, str] | None = None, app: str = WSGI_APP
    ) -> None:
        self.port = free_port()
        self.app_name = f"{PREFIX}-web-{self.port}"
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_dir / f"gunicorn-{self.port}.log"
        env = {**os.environ, **(env or {}), "PGAPPNAME": self.app_name}
        command = [
            sys.executable, "-m", "gunicorn", app,
            "--bind", f"127.0.0.1:{self.port}", "--workers", "1", "--threads", "1",
            "--timeout", "900", "--log-level", "warning",
        ]  # fmt: skip
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self._wait()

    def _wait(self) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"gunicorn exited; see {self.log_path}")
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) == 0 and self.worker_pid():
                    return
            time.sleep(0.1)
        raise SystemExit(f"gunicorn did not start in 120 s; see {self.log_path}")

    def worker_pid(self) -> int | None:
        path = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        try:
            children = path.read_text().split()
        except OSError:
            return None
        return int(children[0]) if children else None

    def db_pid(self) -> int | None:
        """The Postgres backend serving the worker (found by application_name)."""
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pid FROM pg_stat_activity WHERE application_name = %s",
                [self.app_name],
            )
            rows = cursor.fetchall()
        return int(rows[0][0]) if len(rows) == 1 else None

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self._log.close()


@contextmanager
def server(
    log_dir: Path, env: dict[str, str] | None = None, app: str = WSGI_APP
) -> Iterator[Server]:
    web = Server(log_dir, env, app)
    try:
        yield web
    finally:
        web.stop()


# --- measurements ---------------------------------------------------------------------


def pct(samples: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(samples, dtype=float), q))


@dataclass
class HttpResult:
    ms: list[float] = field(default_factory=list)
    server_ms: list[float] = field(default_factory=list)
    engine_ms: list[float] = field(default_factory=list)
    web_cpu_ms: float | None = None
    db_cpu_ms: float | None = None
    first_ms: float = 0.0
    load: float | None = None
    words: list[int] = field(default_factory=list)
    warmup_ms: list[float] = field(default_factory=list)


def body(slug: str, scorer: str, query: str) -> dict[str, Any]:
    data: dict[str, Any] = {"catalog": slug, "query": query}
    if scorer != "default":
        data["scorer"] = scorer
    return data


def post(client: httpx.Client, url: str, data: dict[str, Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    response = client.post(url, json=data)
    elapsed = (time.perf_counter() - started) * 1000
    if response.status_code != 200:
        raise SystemExit(f"POST {url}: HTTP {response.status_code}: {response.text}")
    return elapsed, response.json()


def run_http(
    web: Server,
    client: httpx.Client,
    slug: str,
    scorer: str,
    queries: list[str],
    warmup: list[str],
) -> HttpResult:
    url = f"{web.url}/api/v1/select"
    result = HttpResult(words=[len(q.split()) for q in queries])
    for text in warmup:
        elapsed, _ = post(client, url, body(slug, scorer, text))
        result.warmup_ms.append(elapsed)
    result.first_ms = result.warmup_ms[0] if result.warmup_ms else 0.0
    worker, db = web.worker_pid(), web.db_pid()
    worker_cpu, db_cpu = cpu_seconds(worker), cpu_seconds(db)
    for text in queries:
        elapsed, answer = post(client, url, body(slug, scorer, text))
        result.ms.append(elapsed)
        result.server_ms.append(float(answer["stats"]["latency_ms"]))
        result.engine_ms.append(float(answer["stats"]["engine_ms"]))
    after_worker, after_db = cpu_seconds(worker), cpu_seconds(db)
    result.load = os.getloadavg()[0]
    if worker_cpu is not None and after_worker is not None:
        result.web_cpu_ms = (after_worker - worker_cpu) * 1000 / len(queries)
    if db_cpu is not None and after_db is not None and web.db_pid() == db:
        result.db_cpu_ms = (after_db - db_cpu) * 1000 / len(queries)
    return result


def cold_caches() -> None:
    """Forget remembered query vectors and answers in this process."""
    with semantic._lock:
        semantic._query_cache.clear()
    backend_cache = getattr(current_backend(), "_cache", None)
    if backend_cache is not None:
        backend_cache.clear()
    STORE.clear("answer")


def make_request(user: Any, slug: str, scorer: str, text: str) -> SelectionRequest:
    """The engine request the view would build for this body."""
    serializer = SelectInputSerializer(data=body(slug, scorer, text))
    serializer.is_valid(raise_exception=True)
    return build_request(access_for(user), dict(serializer.validated_data))


class Samples:
    """Wall-clock and this thread's CPU time of repeated calls, in ms."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []

    def time(self, call: Callable[[], Any]) -> Any:
        wall, cpu = time.perf_counter(), time.thread_time()
        value = call()
        self.cpu.append((time.thread_time() - cpu) * 1000)
        self.wall.append((time.perf_counter() - wall) * 1000)
        return value


@dataclass
class InProcess:
    select_tools: Samples = field(default_factory=Samples)
    embed: Samples = field(default_factory=Samples)
    pool: Samples = field(default_factory=Samples)
    engine: Samples = field(default_factory=Samples)
    definitions: Samples = field(default_factory=Samples)
    audit: Samples = field(default_factory=Samples)
    snapshot: Samples = field(default_factory=Samples)
    auth: Samples = field(default_factory=Samples)
    catalog: Samples = field(default_factory=Samples)


# (column title, InProcess attribute) of the breakdown tables, in request order.
PARTS = (
    ("select_tools", "select_tools"),
    ("query embedding (cold)", "embed"),
    ("pgvector pool", "pool"),
    ("engine alone", "engine"),
    ("tool definitions", "definitions"),
    ("audit write", "audit"),
    ("snapshot lookup (warm)", "snapshot"),
    ("auth (key + last_used)", "auth"),
    ("catalog lookup", "catalog"),
)


def definitions(catalog: Catalog, names: list[str]) -> dict[str, Any]:
    """The picked tools' definitions, as select_tools loads them."""
    tools = Tool.objects.filter(catalog=catalog, name__in=names)
    return {t.name: export_tool(tool_to_spec(t), "canonical") for t in tools}


def audit_write(
    catalog: Catalog, user: Any, request: SelectionRequest, answer: SelectionAnswer
) -> None:
    """The audit row select_tools appends for this answer (written inline)."""
    record_event(
        EventType.SELECTION,
        actor=user,
        request_id=None,
        catalog_slug=catalog.slug,
        catalog_version=catalog.version,
        summary=f"{str(request.query)[:150]} -> bench",
        input={"request": asdict(request), "format": "canonical"},
        output=answer.audit_record({}),
    )


def run_in_process(
    catalog: Catalog, user: Any, key: str, scorer: str, queries: list[str]
) -> InProcess:
    out = InProcess()
    requests = [make_request(user, catalog.slug, scorer, q) for q in queries]
    snapshot, names = get_snapshot(catalog)  # built before timing, like a warm-up
    cold_caches()
    answers = [
        out.select_tools.time(
            lambda r=r: services.select_tools(catalog, r, fmt="canonical", actor=user)
        )
        for r in requests
    ]
    effective = scorer if scorer != "default" else snapshot.settings.default_scorer
    pools: list[dict[str, float] | None] = [None] * len(requests)
    if effective in SEMANTIC:
        cold_caches()
        texts = [normalize(r).embed_text for r in requests]
        for text in texts:
            out.embed.time(lambda t=text: semantic.embed_query(t))
        size = snapshot.settings.candidate_pool
        for i, text in enumerate(texts):  # the query vectors are cached now
            pool = out.pool.time(
                lambda t=text: semantic.semantic_pool(catalog, t, size)
            )
            pools[i] = {names[k]: v for k, v in (pool or {}).items() if k in names}
    for request, pool in zip(requests, pools, strict=True):
        out.engine.time(lambda r=request, p=pool: select(snapshot, r, semantic=p))
    for answer in answers:
        picked = answer.names
        out.definitions.time(lambda p=picked: definitions(catalog, p))
    for request, answer in zip(requests, answers, strict=True):
        out.audit.time(lambda r=request, a=answer: audit_write(catalog, user, r, a))
    authenticate = ApiKeyAuthentication().authenticate
    factory = RequestFactory()
    visible = Catalog.objects.visible_to
    for _ in range(min(len(requests), 100)):
        out.snapshot.time(lambda: get_snapshot(catalog))
        http = factory.post("/api/v1/select", HTTP_AUTHORIZATION=f"Bearer {key}")
        out.auth.time(lambda h=http: authenticate(h))
        out.catalog.time(lambda: visible(user).filter(slug=catalog.slug).first())
    return out


def snapshot_costs(catalog: Catalog) -> tuple[float, float]:
    """Seconds to build the catalog's snapshot from scratch in this process, and the
    ms it adds to a full garbage collection (a pause any request may hit)."""
    snapshots.clear()
    gc.collect()
    started = time.perf_counter()
    gc.collect()
    before = time.perf_counter() - started
    started = time.perf_counter()
    get_snapshot(catalog)
    build_s = time.perf_counter() - started
    started = time.perf_counter()
    gc.collect()
    return build_s, (time.perf_counter() - started - before) * 1000


# --- profiling ------------------------------------------------------------------------

SPY_RATE = 200
# (label, substring of a py-spy frame "function (path:line)"); a sample counts for a
# label when any frame of its stack contains the substring.
PROFILE_MARKERS = (
    ("whole request (WSGI handler)", "__call__ (django/core/handlers/wsgi.py"),
    ("auth: API key lookup + last_used", "authenticate (identity/auth.py"),
    ("catalog lookup (get_catalog_for_user)", "get_catalog_for_user ("),
    ("input serializer (is_valid)", "is_valid (rest_framework/serializers.py"),
    ("select_tools", "select_tools (selection/services/select.py"),
    (
        "  get_snapshot (settings query + lookup)",
        "get_snapshot (selection/adapters/snapshots.py",
    ),
    (
        "  semantic_pool (incl. embedding)",
        "semantic_pool (selection/adapters/pgvector.py",
    ),
    (
        "    query embedding (embed_query)",
        "embed_query (selection/adapters/pgvector.py",
    ),
    ("  engine select()", "select (selection/engine/engine.py"),
    ("  tool definitions", "_picked (selection/services/select.py"),
    ("  audit write (send_soon)", "send_soon (audit/writer.py"),
    ("response rendering (JSON)", "render (rest_framework/renderers.py"),
    ("all SQL round trips (execute)", "execute (django/db/backends/utils.py"),
    ("DB commit", "commit (django/db/backends/base/base.py"),
)


def profile_pass(
    py_spy: str,
    web: Server,
    client: httpx.Client,
    slug: str,
    scorer: str,
    queries: list[str],
    log_dir: Path,
) -> list[tuple[str, float, float]]:
    """Sample the web worker (idle frames included) while it serves ``queries``.

    Returns (label, share of the samples inside the WSGI handler, ms per request
    while profiled) for each marker."""
    worker = web.worker_pid()
    output = log_dir / f"py-spy-{slug}-{scorer}.txt"
    spy = subprocess.Popen(
        [py_spy, "record", "--pid", str(worker), "--rate", str(SPY_RATE), "--idle",
         "--nonblocking", "--format", "raw", "--output", str(output)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    time.sleep(1.0)
    url = f"{web.url}/api/v1/select"
    for text in queries:
        post(client, url, body(slug, scorer, text))
    os.kill(spy.pid, signal.SIGINT)
    spy.wait(timeout=60)
    counts: dict[str, int] = {label: 0 for label, _ in PROFILE_MARKERS}
    for line in output.read_text().splitlines():
        stack, _, number = line.rpartition(" ")
        if not number.isdigit():
            continue
        for label, marker in PROFILE_MARKERS:
            if marker in stack:
                counts[label] += int(number)
    whole = counts[PROFILE_MARKERS[0][0]] or 1
    say(f"py-spy samples written to {output}")
    return [
        (label, 100 * n / whole, n / SPY_RATE * 1000 / len(queries))
        for label, n in counts.items()
    ]


# --- report ---------------------------------------------------------------------------


def fmt(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def p50_95(samples: Sequence[float]) -> str:
    if not samples:
        return "—"
    return f"{pct(samples, 50):.1f} / {pct(samples, 95):.1f}"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |"]
    lines.append(
        "|" + "|".join("---:" if i else "---" for i in range(len(headers))) + "|"
    )
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


@dataclass
class Row:
    built: Built
    scorer: str
    http: HttpResult
    local: InProcess
    profile: list[tuple[str, float, float]] | None = None


def scorer_label(scorer: str) -> str:
    return f"default ({DEFAULT_SCORER})" if scorer == "default" else scorer


def catalogs_table(built: list[Built]) -> str:
    return table(
        ["tools", "source", "rows + vectors written (s)", "HNSW build (s)",
         "snapshot build, in process (s)", "full GC pause added by it (ms)"],
        [[f"{b.tools:,}", b.label, fmt(b.rows_s), fmt(b.index_s),
          fmt(b.snapshot_s), fmt(b.gc_ms)] for b in built],
    )  # fmt: skip


def http_table(rows: list[Row]) -> str:
    return table(
        ["tools", "scorer", "p50", "p95", "p99", "mean", "min",
         "server latency_ms p50 / p95", "engine_ms p50 / p95", "web CPU ms/req",
         "Postgres CPU ms/req", "load avg", "query words", "first request (ms)"],
        [[f"{r.built.tools:,}", scorer_label(r.scorer),
          fmt(pct(r.http.ms, 50)), fmt(pct(r.http.ms, 95)), fmt(pct(r.http.ms, 99)),
          fmt(float(np.mean(r.http.ms))), fmt(min(r.http.ms)),
          p50_95(r.http.server_ms), p50_95(r.http.engine_ms),
          fmt(r.http.web_cpu_ms), fmt(r.http.db_cpu_ms), fmt(r.http.load),
          fmt(float(np.mean(r.http.words))),
          fmt(r.http.first_ms, 0)] for r in rows],
    )  # fmt: skip


WORD_BUCKETS = ((1, 10), (11, 20), (21, 40), (41, 10_000))


def length_table(rows: list[Row]) -> str:
    """HTTP latency by query length: the query embedding grows with it."""
    headers = ["tools", "scorer"] + [
        f"{lo}–{hi} words" if hi < 10_000 else f"> {lo - 1} words"
        for lo, hi in WORD_BUCKETS
    ]
    out = []
    for r in rows:
        cells = [f"{r.built.tools:,}", scorer_label(r.scorer)]
        for lo, hi in WORD_BUCKETS:
            ms = [
                m for m, w in zip(r.http.ms, r.http.words, strict=True) if lo <= w <= hi
            ]
            cells.append(f"{pct(ms, 50):.1f} (n={len(ms)})" if ms else "—")
        out.append(cells)
    return table(headers, out)


def parts_table(rows: list[Row], cpu: bool) -> str:
    headers = ["tools", "scorer"] + [title for title, _ in PARTS]
    body_rows = []
    for r in rows:
        cells = [f"{r.built.tools:,}", scorer_label(r.scorer)]
        for _, name in PARTS:
            samples: Samples = getattr(r.local, name)
            cells.append(
                fmt(pct(samples.cpu, 50))
                if cpu and samples.cpu
                else p50_95(samples.wall)
            )
        if not cpu:
            gap = pct(r.http.ms, 50) - pct(r.local.select_tools.wall, 50)
            cells.append(fmt(gap))
        body_rows.append(cells)
    if not cpu:
        headers.append("HTTP p50 − select_tools p50")
    return table(headers, body_rows)


def profile_table(r: Row) -> str:
    mean = float(np.mean(r.http.ms))
    return table(
        ["part of the request", "share of request samples",
         "ms/request while profiled", "≈ ms of the unprofiled mean"],
        [[label, f"{share:.0f}%", f"{ms:.1f}", f"{share * mean / 100:.1f}"]
         for label, share, ms in r.profile or []],
    )  # fmt: skip


def targets_table(rows: list[Row]) -> str:
    out = []
    for size, stat, limit in TARGETS:
        match = [r for r in rows if r.built.size == size and r.scorer == "default"]
        if not match:
            out.append([f"{size:,}", f"{stat} ≤ {limit:g} ms", "not measured", "—"])
            continue
        value = pct(match[0].http.ms, float(stat[1:]))
        verdict = "met" if value <= limit else "**missed**"
        out.append([f"{size:,}", f"{stat} ≤ {limit:g} ms", f"{value:.1f} ms", verdict])
    return table(["tools", "target", "measured", "result"], out)


def report(built: list[Built], rows: list[Row], args: argparse.Namespace) -> str:
    now = dt.datetime.now().isoformat(timespec="minutes")
    out = [
        f"Selection speed, {now}: {os.cpu_count()} CPUs, load average "
        f"{args.load_start:.1f} at the start and {os.getloadavg()[0]:.1f} at the end, "
        f"DEBUG={settings.DEBUG}, hnsw.ef_search={settings.QUIVER_EF_SEARCH}, "
        f"model {current_backend().model_id}; {args.requests} requests per row "
        f"after {args.warmup} warm-up requests.",
        "\n### Catalogs\n",
        catalogs_table(built),
        "\n### Over HTTP (gunicorn, 1 worker × 1 thread; client-measured, ms)\n",
        http_table(rows),
        "\n### HTTP p50 (ms) by query length\n",
        length_table(rows),
        "\n### Where the time goes (in process, wall-clock p50 / p95 ms)\n",
        parts_table(rows, cpu=False),
        "\n### The same parts, CPU time of this process (p50 ms)\n",
        parts_table(rows, cpu=True),
    ]
    for r in rows:
        if r.profile:
            out.append(
                f"\n### py-spy: web worker, {r.built.tools:,} tools, "
                f"{scorer_label(r.scorer)} ({args.profile_requests} requests, "
                "idle included)\n"
            )
            out.append(profile_table(r))
    out.append(
        "\n### Targets (over HTTP, default scorer, query embedding included, "
        "cache cold)\n"
    )
    out.append(targets_table(rows))
    return "\n".join(out)


# --- main -----------------------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)))
    parser.add_argument("--scorers", default="default")
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--keep", action="store_true", help="keep the catalogs")
    parser.add_argument("--py-spy", dest="py_spy", default=None, help="py-spy binary")
    parser.add_argument("--profile-requests", type=int, default=100)
    parser.add_argument("--no-vector-cache", dest="vector_cache", action="store_false")
    args = parser.parse_args(argv)
    args.sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    args.scorers = [s.strip() for s in args.scorers.split(",") if s.strip()]
    for scorer in args.scorers:
        if scorer not in SCORER_CHOICES:
            parser.error(f"--scorers: {scorer!r} is not one of {SCORER_CHOICES}")
    if args.requests < 1 or args.warmup < 1:
        parser.error("--requests and --warmup must be at least 1")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    args.load_start = os.getloadavg()[0]
    say(f"load average at start: {args.load_start:.1f}; migrating ...")
    call_command("migrate", verbosity=0, interactive=False)
    clean_up()
    backend = current_backend()
    built: list[Built] = []
    rows: list[Row] = []
    log_dir = Path(tempfile.mkdtemp(prefix="bench-speed-"))
    try:
        for size in args.sizes:
            say(f"building the {size:,}-tool catalog ...")
            built.append(build_catalog(size, args.vector_cache))
        _, key = create_api_client(
            CLIENT_NAME, "agent", catalogs=[b.catalog.slug for b in built]
        )
        user = ApiClient.objects.get(name=CLIENT_NAME).user
        backend.embed_query("load the query model in this process too")
        for b in built:
            rows += measure(b, args, key, user, log_dir)
    finally:
        if args.keep:
            say("--keep: leaving the bench-speed-* catalogs in place")
        else:
            clean_up()
    print(report(built, rows, args), flush=True)
    if args.keep or args.py_spy:
        say(f"server logs and profiles are in {log_dir}")
    else:
        shutil.rmtree(log_dir, ignore_errors=True)
    return 0


def measure(
    b: Built, args: argparse.Namespace, key: str, user: Any, log_dir: Path
) -> list[Row]:
    pool = query_pool(dataset_for(b.size))
    profiled = args.profile_requests if args.py_spy else 0
    needed = len(args.scorers) * args.requests + profiled + args.warmup
    if needed > len(pool):
        raise SystemExit(f"{needed} distinct queries needed, {len(pool)} available")
    warmup = pool[-args.warmup :]
    say(f"{b.tools:,} tools: building the snapshot in this process ...")
    b.snapshot_s, b.gc_ms = snapshot_costs(b.catalog)
    say(f"{b.tools:,} tools: snapshot built in {b.snapshot_s:.1f}s")
    rows = []
    headers = {"Authorization": f"Bearer {key}"}
    with (
        server(log_dir) as web,
        httpx.Client(headers=headers, timeout=900) as client,
    ):
        for i, scorer in enumerate(args.scorers):
            queries = pool[i * args.requests : (i + 1) * args.requests]
            say(f"{b.tools:,} tools, {scorer}: warm-up + {len(queries)} HTTP requests")
            http = run_http(web, client, b.catalog.slug, scorer, queries, warmup)
            say(
                f"{b.tools:,} tools, {scorer}: HTTP p50 {pct(http.ms, 50):.1f} ms, "
                f"p95 {pct(http.ms, 95):.1f} ms "
                f"(first request {http.first_ms:.0f} ms); in process ..."
            )
            local = run_in_process(b.catalog, user, key, scorer, queries)
            rows.append(Row(b, scorer, http, local))
        if args.py_spy:
            scorer = args.scorers[0]
            start = len(args.scorers) * args.requests
            queries = pool[start : start + profiled]
            say(f"{b.tools:,} tools, {scorer}: py-spy pass ...")
            rows[0].profile = profile_pass(
                args.py_spy, web, client, b.catalog.slug, scorer, queries, log_dir
            )
    return rows


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
