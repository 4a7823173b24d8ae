"""Building the static query encoder (embeddings.static) from the catalog.

The encoder is trained on the texts of the active tools of every catalog (never on
requests), sampled down to ``max_tools``, and replaces the previous one for the
whole installation. Building one changes how requests' sentences are embedded,
so it is an audit event, written before the new file takes its place (and, with
``QUIVER_QUERY_ENCODER_STORE=postgres``, with the file's row, in one transaction:
catalog.query_encoder_store).
"""

from __future__ import annotations

import contextlib
import logging
import random
import subprocess
import sys
from pathlib import Path

from django.db import transaction

from audit.actors import Actor
from audit.choices import EventType
from audit.services import record_event
from catalog import query_encoder_store
from catalog.choices import ToolStatus
from catalog.encoder_texts import ToolText, training_texts
from catalog.models import Tool
from embeddings import backends
from embeddings.onnx_encoder import file_lock
from embeddings.static import (
    encoder_from_bytes,
    encoder_id_of,
    partial_path,
    trained_on,
    use_loaded,
)
from embeddings.static_training import Progress, TrainingSetup, build_weights

logger = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[2]
DEFAULT_MAX_TOOLS = 8_000
# A build is due when there is none, or the active tools are more than this many
# times those it was trained on (an import of a new kind of catalog).
REBUILD_GROWTH = 2.0


class QueryEncoderError(RuntimeError):
    """The encoder cannot be built (no tools to learn from)."""


def training_tools(max_tools: int = DEFAULT_MAX_TOOLS, seed: int = 0) -> list[ToolText]:
    """Active tools of every catalog, a fixed random sample of ``max_tools``."""
    active = Tool.objects.filter(status=ToolStatus.ACTIVE)
    ids = list(active.order_by("pk").values_list("pk", flat=True))
    if len(ids) > max_tools:
        ids = sorted(random.Random(seed).sample(ids, max_tools))
    rows = Tool.objects.filter(pk__in=ids).order_by("pk")
    return [
        ToolText(name, description, parameters)
        for name, description, parameters in rows.values_list(
            "name", "description", "parameters"
        )
    ]


def single_build() -> contextlib.AbstractContextManager[bool]:
    """Yields True to the one caller holding the build lock (non-blocking): a
    file lock in the state directory, or with the encoder kept in Postgres, an
    advisory lock every pod shares."""
    if query_encoder_store.in_database():
        return query_encoder_store.build_lock()
    return file_lock(backends.static_encoder_path().with_suffix(".lock"), wait=False)


def build_in_child_if_due() -> str:
    """``manage.py build_query_encoder --if-due`` in a child process; its last
    line of output (or of errors, logged, when it failed)."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "build_query_encoder", "--if-due"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    lines = (done.stdout if done.returncode == 0 else done.stderr).strip().splitlines()
    last = lines[-1] if lines else f"exit code {done.returncode}"
    if done.returncode != 0:
        logger.warning("building the static query encoder failed: %s", last)
    return last


def build_is_due() -> bool:
    """No encoder yet, or the catalog has grown well past what it learnt from."""
    if query_encoder_store.in_database():
        stored = query_encoder_store.newest(
            backends.local_onnx_encoder().weights_digest
        )
        if stored is None:
            return True
        learnt_from = stored[2]
    else:
        path = backends.static_encoder_path()
        if not path.exists():
            return True
        try:
            learnt_from = trained_on(path)
        except (OSError, ValueError, KeyError):
            return True
    active = Tool.objects.filter(status=ToolStatus.ACTIVE).count()
    return active > REBUILD_GROWTH * max(learnt_from, 1)


def build_query_encoder(
    max_tools: int = DEFAULT_MAX_TOOLS,
    setup: TrainingSetup | None = None,
    progress: Progress | None = None,
    actor: Actor = None,
) -> str:
    """Train, record and install a new encoder; returns its ``encoder_id``."""
    tools = training_tools(max_tools)
    if not tools:
        raise QueryEncoderError("there are no active tools to learn from")
    minilm = backends.local_onnx_encoder()
    texts = training_texts(tools, seed=(setup or TrainingSetup()).seed)
    weights = build_weights(texts, minilm, setup, progress, tools=len(tools))
    path = backends.static_encoder_path()
    partial = partial_path(path)
    partial.parent.mkdir(parents=True, exist_ok=True)
    data = weights.to_bytes()
    partial.write_bytes(data)
    encoder_id = encoder_id_of(data)
    try:
        with transaction.atomic():
            record_event(
                EventType.QUERY_ENCODER,
                actor=actor,
                request_id=None,
                summary=f"Static query encoder {encoder_id} built from "
                f"{len(tools)} tools",
                input={"max_tools": max_tools, "tools": len(tools)},
                output={"encoder_id": encoder_id, "path": path.name},
            )
            if query_encoder_store.in_database():
                query_encoder_store.save(
                    minilm.weights_digest, data, encoder_id, weights.trained_on
                )
            partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)  # gone already unless the event failed
    use_loaded(path, encoder_from_bytes(data, minilm.tokenizer))
    return encoder_id
