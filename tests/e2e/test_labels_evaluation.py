"""In a real browser: a curator uploads labels from a file, sees what was refused,
deletes one; runs an evaluation and watches it finish; reads the latest run, the
chart of runs, two settings side by side, the misses and a why-not."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from catalog.models import Catalog, Tool
from learning.models import Evaluation, Label
from learning.services.evaluations import run_now, start_evaluation
from learning.tasks import run_evaluation
from tests.factories import embed_now, make_tool
from tests.learning.test_evaluation import LABELS, TOOLS

pytestmark = pytest.mark.django_db(transaction=True)

STATIC = Path(__file__).resolve().parents[2] / "static" / "learning"


@pytest.fixture
def catalog(live_server):
    for name, description in TOOLS.items():
        make_tool(name=name, description=description)
    return embed_now(Catalog.objects.get(slug="default"))


def test_a_curator_uploads_labels_and_deletes_one(page, catalog, screenshot, tmp_path):
    bad = tmp_path / "more.jsonl"
    bad.write_text('{"query": "x", "tools": ["no_such_tool"]}\n')
    page.goto("/catalogs/")
    page.locator("[data-catalog=default]").get_by_role("link", name="Labels").click()
    page.set_input_files("#id_file", str(STATIC / "labels-sample.jsonl"))
    page.get_by_role("button", name="Upload").click()
    expect(page.get_by_test_id("upload-result")).to_contain_text("4 labels added")
    page.set_input_files("#id_file", str(bad))
    page.get_by_role("button", name="Upload").click()
    result = page.get_by_test_id("upload-result")
    expect(result).to_contain_text("0 labels added, 1 refused")
    expect(result).to_contain_text("no tool 'no_such_tool' in catalog 'default'")
    expect(page.get_by_test_id("count-accepted")).to_have_text("4 accepted")
    screenshot(page, "labels")
    row = page.locator("tr", has_text="Tell me a joke about penguins")
    row.get_by_role("button", name="Delete").click()
    expect(page.locator(".messages")).to_contain_text("Deleted 1 label(s).")
    assert Label.objects.count() == 3


def test_a_curator_runs_and_reads_an_evaluation(page, catalog, curator, screenshot):
    Label.objects.bulk_create(
        [Label(catalog=catalog, query=q, tools=t) for q, t in LABELS]
    )
    run_now(start_evaluation(catalog, actor=curator, enqueue=False))
    page.goto("/catalogs/default/evaluation/")
    page.get_by_role("button", name="Evaluate 15 labels").click()
    queued = Evaluation.objects.order_by("-id").first()
    expect(page.locator(f"[data-run='{queued.pk}']")).to_contain_text("queued")
    assert run_evaluation(queued.pk) == "succeeded"
    expect(page.locator(f"[data-run='{queued.pk}']")).to_contain_text(
        "succeeded", timeout=8000
    )
    tried = {"default_scorer": "keyword"}
    keyword = run_now(
        start_evaluation(catalog, actor=curator, settings_data=tried, enqueue=False)
    )
    page.reload()
    expect(page.get_by_test_id("latest-run")).to_contain_text(
        f"Latest run #{keyword.pk}"
    )
    expect(page.get_by_test_id("runs-chart").locator("polyline")).to_have_count(3)
    compare = page.get_by_test_id("compare")
    expect(compare).to_contain_text("tried (on v0)")
    expect(compare).to_contain_text(f"A: #{queued.pk}")
    misses = page.get_by_test_id("misses")
    expect(misses.locator("tr[data-row]").first).to_be_visible()
    expect(
        page.get_by_test_id("confusable").locator("tbody tr").first
    ).not_to_contain_text("No confusable pairs")
    screenshot(page, "evaluation")
    page.get_by_test_id("misses").get_by_role("link", name="Why not?").first.click()
    expect(page.locator(".why-not-answer").first).to_contain_text("Outcome")
    assert Tool.objects.count() == len(TOOLS)
