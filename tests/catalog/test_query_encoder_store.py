"""The static query encoder kept in Postgres (QUIVER_QUERY_ENCODER_STORE=postgres):
built once for every pod, copied into each pod's own state directory, served under
the same id everywhere. Real build, real Postgres; each "pod" is a file path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from django.conf import settings as django_settings

from audit.choices import EventType
from audit.models import AuditEvent
from catalog import query_encoder_store
from catalog.models import StoredQueryEncoder
from catalog.services.query_encoder import (
    build_is_due,
    build_query_encoder,
    single_build,
)
from embeddings import backends
from embeddings.static import StaticWeights, encoder_id_of, forget_loaded
from embeddings.static_training import TrainingSetup
from tests.conftest import wait_until
from tests.selection.test_select_sentences import TOOLS
from tests.selection.test_select_sentences import catalog as catalog  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def in_postgres(settings: Any) -> None:
    settings.QUIVER_QUERY_ENCODER_STORE = "postgres"


@pytest.fixture
def pod(tmp_path: Path, monkeypatch: Any) -> Any:
    """Make ``pod(name)`` this process's encoder file: one pod's state directory
    (the shared test state directory stays clean)."""

    def become(name: str) -> Path:
        path = tmp_path / name / "models" / "query-static-test.npz"
        monkeypatch.setattr(backends, "static_encoder_path", lambda: path)
        forget_loaded()
        return path

    yield become
    forget_loaded()


def digest() -> str:
    return backends.local_onnx_encoder().weights_digest


def stored(trained_on: int, rows: int = 8) -> str:
    """A small encoder's file saved as a build would (its id returned); files of
    another size of table never look like the same file to the loader."""
    weights = StaticWeights(
        table=np.full((rows, 384), 0.1, dtype=np.float32),
        w1=np.zeros((384, 1)),
        b1=np.zeros(1),
        w2=np.zeros((1, 384)),
        trained_on=trained_on,
    )
    data = weights.to_bytes()
    query_encoder_store.save(digest(), data, encoder_id_of(data), trained_on)
    return encoder_id_of(data)


def test_a_build_is_stored_with_its_audit_event_and_reaches_another_pod(
    in_postgres,
    catalog,  # noqa: F811
    pod,
):
    pod("worker")
    built = build_query_encoder(setup=TrainingSetup(epochs=1))
    row = StoredQueryEncoder.objects.get()
    event = AuditEvent.objects.get(event_type=EventType.QUERY_ENCODER)
    assert row.encoder_id == built == event.output["encoder_id"]
    assert (row.weights_digest, row.trained_on) == (digest(), len(TOOLS))
    assert not build_is_due()
    web = pod("web")
    assert not web.exists()
    served = backends.local_static_encoder(wait=True)
    assert served is not None and served.encoder_id == built
    assert encoder_id_of(web.read_bytes()) == built


def test_a_pod_with_another_encoders_file_gets_the_newest(in_postgres, pod):
    first = stored(10, rows=8)
    path = pod("web")
    assert backends.local_static_encoder(wait=True).encoder_id == first
    newest = stored(40, rows=9)
    assert backends.local_static_encoder(wait=True).encoder_id == newest
    assert encoder_id_of(path.read_bytes()) == newest


def test_with_nothing_stored_a_leftover_file_is_not_served(in_postgres, pod, settings):
    path = pod("web")
    settings.QUIVER_QUERY_ENCODER_STORE = "file"
    path.parent.mkdir(parents=True)
    path.write_bytes(
        StaticWeights(
            np.zeros((8, 384)), np.zeros((384, 1)), np.zeros(1), np.zeros((1, 384))
        ).to_bytes()
    )
    assert backends.local_static_encoder(wait=True) is not None  # the file store
    settings.QUIVER_QUERY_ENCODER_STORE = "postgres"
    forget_loaded()
    assert backends.local_static_encoder(wait=True) is None
    assert not path.exists()


def test_the_file_store_never_reads_the_table(pod, settings):
    assert settings.QUIVER_QUERY_ENCODER_STORE == "file"
    stored(10)
    path = pod("web")
    assert backends.local_static_encoder(wait=True) is None
    assert not path.exists()


def test_a_build_is_due_by_what_the_stored_one_learnt_from(in_postgres, catalog):  # noqa: F811
    assert build_is_due()  # none stored
    stored(len(TOOLS))
    assert not build_is_due()
    stored(len(TOOLS) // 3)  # the catalog has grown past twice what it learnt
    assert build_is_due()


def test_one_build_at_a_time_across_every_pod(in_postgres):
    db = django_settings.DATABASES["default"]
    other = psycopg.connect(
        dbname=db["NAME"],
        user=db["USER"],
        password=db["PASSWORD"],
        host=db["HOST"],
        port=db["PORT"] or None,
        autocommit=True,
    )
    lock = query_encoder_store.BUILD_LOCK
    try:
        with single_build() as mine:
            assert mine
            taken = other.execute("SELECT pg_try_advisory_lock(%s)", [lock])
            assert taken.fetchone()[0] is False
        free = other.execute("SELECT pg_try_advisory_lock(%s)", [lock]).fetchone()
        assert free[0] is True
        with single_build() as mine:
            assert not mine  # the other pod holds it now
    finally:
        other.close()


@pytest.mark.django_db(transaction=True)
def test_a_web_process_copies_a_new_one_in_the_background(settings, pod):
    settings.QUIVER_QUERY_ENCODER_STORE = "postgres"
    encoder_id = stored(10)
    path = pod("web")
    query_encoder_store.refresh(path, digest(), False)
    wait_until(path.exists, timeout=30, what="the background copy")
    wait_until(
        lambda: encoder_id_of(path.read_bytes()) == encoder_id,
        timeout=30,
        what="the whole file",
    )
    # Looked at again only after RELOAD_SECONDS: a second call starts no copy.
    path.unlink()
    query_encoder_store.refresh(path, digest(), False)
    assert not path.exists()
