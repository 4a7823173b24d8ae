"""docs/tutorials/first-catalog.md, steps 3 and 4 as written: a catalog of your
own from the sample OpenAI file, asked as an agent would; the answer as shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from catalog.models import Catalog
from catalog.services.imports import run_import
from jobs.services import claim_job
from tests.docs.shown import as_printed, check_shown
from tests.factories import embed_now

pytestmark = pytest.mark.django_db
SAMPLE = (
    Path(__file__).resolve().parents[2] / "static" / "samples" / "import-openai.json"
)


def test_your_own_catalog_answers_the_berlin_request_as_shown(with_key, api):
    curator = with_key("curator", "me")
    created = curator.post(
        "/api/v1/catalogs/", {"slug": "mine", "name": "My tools"}, format="json"
    )
    with SAMPLE.open("rb") as upload:
        queued = curator.post(
            "/api/v1/catalogs/mine/import", {"file": upload}, format="multipart"
        )
    assert (created.status_code, queued.status_code) == (201, 202), queued.json()
    run_import(claim_job(queued.json()["id"]))
    embed_now(Catalog.objects.get(slug="mine"))
    agent = with_key("agent", "my-agent", roles=["support"])

    answer = agent.post(
        "/api/v1/select",
        {"query": "will it rain in Berlin tomorrow?", "catalog": "mine"},
        format="json",
    )

    check_shown(
        "docs/tutorials/first-catalog.md",
        "first-catalog-select",
        as_printed(answer.json()),
    )
