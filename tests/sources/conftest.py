"""Sources fixtures: a running upstream, an admin's API client, and a sync run in
this process the way a worker runs it (claim, then the service)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from rest_framework.test import APIClient

from catalog.models import Catalog
from catalog.services import ensure_default_catalog
from jobs.models import Job
from jobs.services import claim_job
from sources.models import Source
from sources.services import create_source, start_sync
from sources.sync import run_sync
from tests.upstream import Upstream, running_upstream

SECRET = "Bearer sk-upstream-7f3a9c1e5d"


@pytest.fixture(autouse=True)
def long_job_lease(settings: Any) -> None:
    """The job's heartbeat thread uses a connection of its own; in a test's
    transaction it would wait on the claimed row, so it must not beat."""
    settings.QUIVER_JOB_LEASE_S = 600


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    with running_upstream() as server:
        yield server


@pytest.fixture
def catalog(db: None) -> Catalog:
    return ensure_default_catalog()


@pytest.fixture
def admin_api(api: APIClient, admin_user: Any) -> APIClient:
    api.force_login(admin_user)
    return api


@pytest.fixture
def make_source(catalog: Catalog, admin_user: Any) -> Callable[..., Source]:
    def make(url: str, name: str = "weather", **fields: Any) -> Source:
        added = create_source(catalog, name=name, url=url, actor=admin_user, **fields)
        return added.source

    return make


def sync(source: Source, actor: Any = None) -> Job:
    """Queue the source's sync and run it here, as a worker would."""
    job = start_sync(source, actor=actor)
    claimed = claim_job(job.pk)
    assert claimed is not None
    done = run_sync(claimed)
    source.refresh_from_db()
    return done


def approve_waiting(actor: Any) -> list[Any]:
    """Approve every change a sync left waiting for review (as a curator would
    on the Reviews page); the reviews decided."""
    from catalog.models import ToolReview
    from catalog.services.pinning import approve_change

    waiting = ToolReview.objects.filter(state="pending", kind="change")
    return [approve_change(review, actor=actor) for review in waiting]
