"""An import never leaves a catalog silently smaller than its file: a name outside
the rule is refused with its reason (``names=refuse``, the default) or, with
``names=rename``, given a deterministic safe name while the file's is kept as the
tool's original name; the dry run, the job and the audit say which names changed."""

from __future__ import annotations

import html
import json
from typing import Any

import pytest

from audit.models import AuditEvent
from catalog.formats import export_tools
from catalog.models import Catalog, Tool
from catalog.services import create_catalog, ensure_default_catalog
from catalog.services.imports import preview_import, run_import, start_import
from catalog.services.tools import tool_to_spec
from jobs.models import Job
from jobs.services import claim_job
from tests.factories import make_tool, make_user, weather_schema

pytestmark = [pytest.mark.integration]

CHUNKS = pytest.mark.parametrize("chunk", [0, 3], ids=["one-by-one", "bulk"])


def tool(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "parameters": weather_schema(), **fields}


def run(
    document: list[Any],
    settings: Any,
    chunk: int,
    names: str = "rename",
    catalog: Catalog | None = None,
) -> Job:
    settings.QUIVER_IMPORT_CHUNK = chunk
    settings.QUIVER_IMPORT_EMBED_LAG = 0
    catalog = catalog or ensure_default_catalog()
    actor = make_user(f"importer{Job.objects.count()}")
    job = start_import(catalog, document, "canonical", actor=actor, names=names)
    claimed = claim_job(job.pk)
    assert claimed is not None
    return run_import(claimed)


def outcomes(job: Job) -> list[tuple[Any, ...]]:
    return [(e["name"], e["outcome"], e.get("renamed_from")) for e in job.items]


def stored() -> dict[str, str]:
    return dict(Tool.objects.values_list("name", "original_name"))


@CHUNKS
def test_rename_imports_every_real_catalog_name_under_a_safe_one(
    transactional_db, purged_broker, settings, chunk
):
    document = [
        tool("huggingface:facebook/bart-base"),
        tool("__get_all_user_list"),
        tool("PDF&URLTool"),
        tool("requestFirst Aid Assistance"),
    ]
    job = run(document, settings, chunk)
    assert outcomes(job) == [
        ("huggingface_facebook/bart-base", "created", "huggingface:facebook/bart-base"),
        ("__get_all_user_list", "created", None),
        ("PDF_URLTool", "created", "PDF&URLTool"),
        ("requestFirst_Aid_Assistance", "created", "requestFirst Aid Assistance"),
    ]  # fmt: skip
    assert job.counts == {"created": 4, "updated": 0, "unchanged": 0, "rejected": 0}
    assert stored() == {
        "huggingface_facebook/bart-base": "huggingface:facebook/bart-base",
        "__get_all_user_list": "",
        "PDF_URLTool": "PDF&URLTool",
        "requestFirst_Aid_Assistance": "requestFirst Aid Assistance",
    }
    assert (
        "'PDF&URLTool' breaks the tool-name rule: named 'PDF_URLTool'"
        in (job.items[2]["reason"])
    )
    providers = dict(Tool.objects.values_list("name", "provider_name"))
    assert providers["huggingface_facebook/bart-base"] == (
        "huggingface_facebook_bart-base"
    )


@CHUNKS
def test_refuse_rejects_each_such_item_saying_what_rename_would_do(
    transactional_db, purged_broker, settings, chunk
):
    job = run([tool("PDF&URLTool"), tool("fine")], settings, chunk, names="refuse")
    assert outcomes(job) == [
        ("PDF&URLTool", "rejected", None),
        ("fine", "created", None),
    ]
    reason = job.items[0]["reason"]
    assert "name: may hold only the letters" in reason
    assert "found '&'" in reason
    assert reason.endswith("names=rename would import it under a safe name")
    assert list(Tool.objects.values_list("name", flat=True)) == ["fine"]


@CHUNKS
def test_names_colliding_after_renaming_get_suffixes_in_document_order(
    transactional_db, purged_broker, settings, chunk
):
    make_tool(name="a_b_2")
    document = [tool("a b"), tool("a:b"), tool("a_b"), tool("a&b")]
    job = run(document, settings, chunk)
    assert outcomes(job) == [
        ("a_b_3", "created", "a b"),  # a_b is the file's own, a_b_2 the catalog's
        ("a_b_4", "created", "a:b"),
        ("a_b", "created", None),
        ("a_b_5", "created", "a&b"),
    ]
    assert "('a_b' is taken or looks like a name in use)" in job.items[0]["reason"]


@CHUNKS
def test_a_safe_name_never_looks_like_a_name_in_use(
    transactional_db, purged_broker, settings, chunk
):
    make_tool(name="m_tool")
    job = run([tool("rn tool"), tool("fi1e list"), tool("file_list")], settings, chunk)
    assert outcomes(job) == [
        ("rn_tool_2", "created", "rn tool"),  # rn_tool would pass for m_tool
        ("fi1e_list_2", "created", "fi1e list"),  # fi1e_list for the file's file_list
        ("file_list", "created", None),
    ]


@CHUNKS
def test_importing_the_same_file_again_changes_nothing_and_adds_nothing(
    transactional_db, purged_broker, settings, chunk
):
    document = [tool("a b"), tool("a_b"), tool("PDF&URLTool", description="v1")]
    first = run(document, settings, chunk)
    before = stored()
    again = run(document, settings, chunk)
    assert [e["name"] for e in again.items] == [e["name"] for e in first.items]
    assert [e["outcome"] for e in again.items] == ["unchanged"] * 3
    assert stored() == before
    changed = [tool("PDF&URLTool", description="v2")]
    update = run(changed, settings, chunk, names="refuse")  # found by original name
    assert outcomes(update) == [("PDF_URLTool", "updated", "PDF&URLTool")]
    assert Tool.objects.get(name="PDF_URLTool").description == "v2"


@CHUNKS
def test_a_name_seen_twice_in_the_file_is_one_tool(
    transactional_db, purged_broker, settings, chunk
):
    document = [tool("get weather", description="one"), tool("get weather")]
    job = run(document, settings, chunk)
    assert outcomes(job) == [
        ("get_weather", "created", "get weather"),
        ("get_weather", "updated", "get weather"),
    ]
    assert Tool.objects.count() == 1


@CHUNKS
def test_hostile_names_are_refused_or_renamed_never_stored_as_they_are(
    transactional_db, purged_broker, settings, chunk
):
    make_tool(name="list_files")
    long = "x" * 129
    document = [
        tool("list_fil\u0435s"),  # Cyrillic: looks like list_files
        tool("../etc/passwd"),
        tool(long),
        tool("bi_\u202eevil"),  # hidden: never kept, even as an original name
        tool("ctl\x07char"),
        {"name": "", "parameters": weather_schema()},
        tool("\uff4cist_files"),  # fullwidth: folds to a look-alike of list_files
    ]
    job = run(document, settings, chunk)
    rows = outcomes(job)
    assert rows[0][1] == "rejected"
    assert (
        "original_name: 'list_fil\\u0435s' is confusable with 'list_files'"
        in (job.items[0]["reason"])
    )
    assert rows[1] == ("etc/passwd", "created", "../etc/passwd")
    assert rows[2][1:] == ("created", long)
    assert len(rows[2][0]) == 128 and rows[2][0].startswith("x" * 119 + "_")
    for index in (3, 4):
        assert rows[index] == (document[index]["name"], "rejected", None)
        assert "invisible or direction-changing" in job.items[index]["reason"]
    assert rows[5][1] == "rejected"
    assert "must not be empty" in job.items[5]["reason"]
    assert rows[6][1] == "rejected"
    assert "is confusable with 'list_files'" in job.items[6]["reason"]
    assert set(stored()) == {"list_files", "etc/passwd", rows[2][0]}


def test_an_original_name_is_held_to_the_rules_on_the_api_too(with_key):
    make_tool(name="list_files")
    api = with_key("curator")
    for original, rule in [
        ("list_fi1es", "is confusable with 'list_files'"),
        ("list_files", "is confusable with 'list_files'"),  # even the same name
        ("a\u202eb", "invisible or direction-changing"),
        ("o" * 501, "at most 500 characters"),
    ]:
        body = tool("new_tool", original_name=original)
        response = api.post("/api/v1/tools/", body, format="json")
        assert response.status_code == 400, original
        assert rule in response.json()["fields"]["original_name"][0]
    assert list(Tool.objects.values_list("name", flat=True)) == ["list_files"]


def test_the_dry_run_says_which_names_change_and_predicts_the_import(
    with_key, transactional_db, purged_broker, settings
):
    make_tool(name="a_b")
    document = [tool("a b"), tool("PDF&URLTool"), tool("ok")]
    api = with_key("curator")
    url = "/api/v1/catalogs/default/import?dry_run=true&names=rename"
    response = api.post(url, document, format="json")
    assert response.status_code == 200, response.json()
    report = response.json()
    assert report["names"] == "rename"
    assert report["renamed"] == 2
    assert [(i["name"], i.get("renamed_from")) for i in report["items"]] == [
        ("a_b_2", "a b"),
        ("PDF_URLTool", "PDF&URLTool"),
        ("ok", None),
    ]
    assert Tool.objects.count() == 1
    refused = api.post(url.replace("rename", "refuse"), document, format="json")
    assert refused.json()["renamed"] == 0
    assert refused.json()["counts"]["rejected"] == 2
    job = run(document, settings, chunk=3)
    assert job.items == report["items"]


def test_an_unknown_names_option_is_a_400_naming_it(with_key):
    api = with_key("curator")
    url = "/api/v1/catalogs/default/import?names=mangle"
    response = api.post(url, [tool("x")], format="json")
    assert response.status_code == 400
    assert "names" in response.json()["fields"]
    assert not Job.objects.exists()


def test_an_uploaded_file_s_form_may_ask_for_rename(with_key):
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile(
        "tools.json", json.dumps([tool("a b")]).encode(), "application/json"
    )
    response = with_key("curator").post(
        "/api/v1/catalogs/default/import?dry_run=true",
        {"file": upload, "names": "rename"},
        format="multipart",
    )
    assert response.status_code == 200, response.json()
    assert response.json()["items"][0]["name"] == "a_b"


def test_the_console_previews_the_renames_and_imports_them(
    as_curator, transactional_db, purged_broker, settings
):
    settings.QUIVER_IMPORT_EMBED_LAG = 0
    document = json.dumps([tool("PDF&URLTool"), tool("ok")])
    form = {"catalog": "default", "text": document, "format": "", "names": "rename"}
    page = as_curator.post("/import/", form)
    text = html.unescape(page.content.decode())
    assert page.status_code == 200
    assert 'data-testid="preview-renamed"' in text
    assert "from <code>PDF&URLTool</code>" in text
    assert not Tool.objects.exists()
    token = page.context["token"]
    confirm = {
        "confirm": "1",
        "token": token,
        "document": page.context["document_text"],
    }
    response = as_curator.post("/import/", confirm)
    assert response.status_code == 302
    job = Job.objects.get()
    assert job.options["names"] == "rename"
    claimed = claim_job(job.pk)
    assert claimed is not None
    run_import(claimed)
    assert stored() == {"PDF_URLTool": "PDF&URLTool", "ok": ""}


def test_every_rename_is_in_the_audit_chain_with_the_original_name(
    transactional_db, purged_broker, settings
):
    run([tool("PDF&URLTool")], settings, chunk=3)
    event = AuditEvent.objects.get(event_type="tool_changed")
    assert event.summary == "tool 'PDF_URLTool' v1: create"
    assert event.output["after"]["name"] == "PDF_URLTool"
    assert event.output["after"]["original_name"] == "PDF&URLTool"


def test_a_canonical_export_imports_back_as_the_same_tools(
    transactional_db, purged_broker, settings
):
    run([tool("PDF&URLTool", description="Read PDFs and URLs.")], settings, chunk=3)
    exported = export_tools([tool_to_spec(t) for t in Tool.objects.all()], "canonical")
    assert exported["tools"][0]["original_name"] == "PDF&URLTool"
    copy = create_catalog("copy", "Copy")
    job = run(exported["tools"], settings, chunk=3, names="refuse", catalog=copy)
    assert outcomes(job) == [("PDF_URLTool", "created", None)]
    twin = Tool.objects.get(catalog=copy)
    assert (twin.name, twin.original_name) == ("PDF_URLTool", "PDF&URLTool")
    mcp = export_tools([tool_to_spec(twin)], "mcp")
    assert isinstance(mcp, dict)
    assert mcp["tools"][0]["name"] == "PDF_URLTool"
    assert mcp["tools"][0]["title"] == "PDF&URLTool"


def test_a_preview_never_writes_even_when_it_renames(transactional_db):
    catalog = ensure_default_catalog()
    report = preview_import(
        catalog, [tool("a b")], "canonical", actor=make_user("p"), names="rename"
    )
    assert report["items"][0]["outcome"] == "created"
    assert not Tool.objects.exists()
    assert not AuditEvent.objects.filter(event_type="tool_changed").exists()


def test_a_resumed_import_gives_the_names_an_uninterrupted_one_gives(
    transactional_db, purged_broker, settings
):
    document = [tool("a b"), tool("a:b"), tool("a_b"), tool("c d"), tool("c&d")]
    whole = run(document, settings, chunk=2, catalog=create_catalog("whole", "W"))
    settings.QUIVER_IMPORT_CHUNK = 2
    catalog = create_catalog("resumed", "R")
    job = start_import(catalog, document, "canonical", actor=None, names="rename")

    class WorkerDied(Exception):
        pass

    def die(job: Job) -> None:
        raise WorkerDied

    claimed = claim_job(job.pk)
    assert claimed is not None
    with pytest.raises(WorkerDied):
        run_import(claimed, die)
    Job.objects.filter(pk=job.pk).update(state="queued")
    again = claim_job(job.pk)
    assert again is not None
    resumed = run_import(again)
    assert resumed.items == whole.items
    names = Tool.objects.filter(catalog__slug="resumed").values_list("name", flat=True)
    assert sorted(names) == ["a_b", "a_b_2", "a_b_3", "c_d", "c_d_2"]
