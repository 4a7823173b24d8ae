"""One name, one tool, on every path that writes a tool.

A model is shown ``src__files_read`` for the tool ``src__files/read`` and calls it
by that name; a curator must not be able to give another tool that name (or one
that looks like it), as its name or as its provider name, nor the other way
round, on any path: create and rename (API, console, admin), every import format
in both import paths (chunked and one by one), an uploaded file, the dry run,
``names=rename``'s safe names, and a sync. Of two writers at once, the database
refuses the second.
"""

from __future__ import annotations

import html
import itertools
import json
import threading
from typing import Any

import pytest
from django.core import checks
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import IntegrityError, connection, transaction
from rest_framework.test import APIClient

from catalog.formats import FORMATS, export_tool
from catalog.models import Catalog, Tool, ToolName
from catalog.names import ToolConflict, hold
from catalog.naming import look
from catalog.services import create_tool, ensure_default_catalog, update_tool
from catalog.services.bulk_edit import check_change
from catalog.services.imports import run_import, start_import
from catalog.services.tools import tool_to_spec
from jobs.models import Job
from jobs.services import claim_job
from tests.factories import (
    make_client_key,
    make_spec,
    make_tool,
    stored_past_the_rules,
    weather_schema,
)

pytestmark = pytest.mark.django_db

READ = "src__files/read"  # a read-only tool; the model is shown SHOWN
SHOWN = "src__files_read"
HOLDER = "modem_reset"  # a tool whose provider name is not its name
# (field, value, the other tool's name the refusal must name)
TAKEN = [
    ("name", SHOWN, READ),  # another tool's provider name, exactly
    ("name", "src__fi1es_read", READ),  # one that looks like it
    ("provider_name", HOLDER, HOLDER),  # another tool's name, exactly
    ("provider_name", "rnodem_reset", HOLDER),  # one that looks like it
]
NAME_CASES = [case for case in TAKEN if case[0] == "name"]
KEYS = itertools.count(1)


@pytest.fixture
def held(db: None) -> dict[str, Tool]:
    read = make_tool(name=READ, description="Read a file.", safe=True)
    holder = make_tool(name=HOLDER, provider_name="modem_reset_now")
    assert read.provider_name == SHOWN
    return {"read": read, "holder": holder}


def curator_api() -> APIClient:
    api = APIClient()
    key = make_client_key(f"curator-{next(KEYS)}", "curator")
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return api


def refused(response: Any, field: str, other: str) -> bool:
    """A 400 or 409 naming ``field`` and the other tool."""
    messages = response.json().get("fields", {}).get(field, [])
    return response.status_code in (400, 409) and any(other in m for m in messages)


def tools_named(value: str) -> int:
    return Tool.objects.filter(name=value).count() + (
        Tool.objects.filter(provider_name=value).count()
    )


def api_tool(**fields: Any) -> dict[str, Any]:
    return {"name": "newcomer", "parameters": weather_schema(), **fields}


# Create and rename ------------------------------------------------------------------


@pytest.mark.parametrize(("field", "value", "other"), TAKEN)
def test_the_api_refuses_a_new_tool_taking_another_tool_s_name(
    held, field, value, other
):
    response = curator_api().post(
        "/api/v1/tools/", api_tool(**{field: value}), format="json"
    )
    assert refused(response, field, other), response.json()
    assert Tool.objects.count() == 2


@pytest.mark.parametrize(("field", "value", "other"), TAKEN)
def test_the_api_refuses_a_rename_taking_another_tool_s_name(held, field, value, other):
    wipe = make_tool(name="wipe_disk", safe=False, requires_approval=True)
    response = curator_api().patch(
        f"/api/v1/tools/{wipe.pk}/", {field: value}, format="json"
    )
    assert refused(response, field, other), response.json()
    wipe.refresh_from_db()
    assert (wipe.name, wipe.provider_name) == ("wipe_disk", "wipe_disk")


def test_the_refusal_says_whose_provider_name_it_is(held):
    response = curator_api().post("/api/v1/tools/", api_tool(name=SHOWN), format="json")
    assert response.status_code == 409
    assert response.json()["detail"] == (
        "name: 'src__files_read' is the provider name of tool 'src__files/read' "
        "in this catalog: one name means one tool"
    )
    response = curator_api().post(
        "/api/v1/tools/", api_tool(name="src__fi1es_read"), format="json"
    )
    assert response.status_code == 400
    [message] = response.json()["fields"]["name"]
    assert message.startswith(
        "name: 'src__fi1es_read' is confusable with 'src__files_read' (provider "
        "name of 'src__files/read') in this catalog"
    )


def test_a_derived_provider_name_never_takes_another_tool_s_name(held):
    make_tool(name="get_weather")
    dotted = make_tool(name="get.weather")
    assert dotted.provider_name == "get_weather_2"
    assert make_tool(name="rnodem.reset").provider_name == "rnodem_reset_2"


def console_form(**fields: Any) -> dict[str, str]:
    return {
        "catalog": "default",
        "name": "newcomer",
        "description": "Typed by hand.",
        "parameters": json.dumps(weather_schema()),
        "risk_level": "low",
        "status": "active",
        "cost_per_call": "0",
        "currency": "USD",
    } | fields


@pytest.mark.parametrize(("field", "value", "other"), TAKEN)
def test_the_console_refuses_it_on_create_and_on_edit(
    held, as_curator, field, value, other
):
    page = as_curator.post("/tools/new/", console_form(**{field: value}))
    assert "The tool was not saved." in html.unescape(page.content.decode())
    assert other in html.unescape(page.content.decode())
    wipe = make_tool(name="wipe_disk")
    data = console_form(**({"name": "wipe_disk"} | {field: value}))
    del data["catalog"]
    page = as_curator.post(f"/tools/{wipe.pk}/edit/", data)
    assert other in html.unescape(page.content.decode())
    assert Tool.objects.get(pk=wipe.pk).name == "wipe_disk"
    assert tools_named(value) == (1 if value in (SHOWN, HOLDER) else 0)


@pytest.mark.parametrize(("field", "value", "other"), TAKEN)
def test_the_admin_refuses_it(held, client, admin_user, field, value, other):
    client.force_login(admin_user)
    data = console_form(**{field: value}) | {
        "catalog": ensure_default_catalog().pk,
        "provider_name": value if field == "provider_name" else "newcomer",
        "tags": "[]",
        "examples": "[]",
        "role_tags": "[]",
        "capabilities": "[]",
        "keywords": "[]",
        "allowed_roles": "[]",
        "annotations": "{}",
    }
    page = client.post("/admin/catalog/tool/add/", data)
    assert other in html.unescape(page.content.decode())
    assert Tool.objects.count() == 2


def test_bulk_edit_cannot_change_a_name_at_all():
    for key in ("name", "provider_name", "original_name"):
        with pytest.raises(ValidationError) as refusal:
            check_change({key: SHOWN}, None, "")
        assert f"set.{key}" in refusal.value.message_dict


def test_a_tool_keeps_its_own_names_and_may_swap_one_for_a_look_alike(held):
    read = held["read"]
    result = update_tool(read, tool_to_spec(read), actor=None)
    assert result.outcome.value == "unchanged"
    spec = tool_to_spec(read)
    spec.provider_name = "src__fi1es_read"  # its own look: still one tool
    assert update_tool(read, spec, actor=None).tool.provider_name == "src__fi1es_read"


def test_a_name_given_up_is_free_for_another_tool(held):
    spec = tool_to_spec(held["read"])
    spec.provider_name = "files_reader"
    update_tool(held["read"], spec, actor=None)
    assert make_tool(name=SHOWN).provider_name == SHOWN
    assert not ToolName.objects.filter(look=look("files_reader")).exclude(
        tool=held["read"]
    )


# Imports --------------------------------------------------------------------------


def import_document(document: Any, fmt: str, settings: Any, chunk: int) -> Job:
    settings.QUIVER_IMPORT_CHUNK = chunk
    settings.QUIVER_IMPORT_EMBED_LAG = 0
    job = start_import(ensure_default_catalog(), document, fmt, actor=None)
    claimed = claim_job(job.pk)
    assert claimed is not None
    return run_import(claimed)


@pytest.mark.parametrize("chunk", [0, 4], ids=["one-by-one", "bulk"])
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(("field", "value", "other"), NAME_CASES)
def test_every_import_format_refuses_a_name_another_tool_holds(
    held, purged_broker, settings, fmt, chunk, field, value, other
):
    exported = [export_tool(make_spec(name), fmt) for name in ("fine_tool", value)]
    document = {"tools": exported} if fmt == "mcp" else exported
    job = import_document(document, fmt, settings, chunk)
    outcomes = [(item["outcome"], item["reason"]) for item in job.items]
    assert outcomes[0] == ("created", "")
    assert outcomes[1][0] == "rejected" and other in outcomes[1][1], outcomes
    assert tools_named(value) == (1 if value == SHOWN else 0)


@pytest.mark.parametrize("chunk", [0, 4], ids=["one-by-one", "bulk"])
@pytest.mark.parametrize(("field", "value", "other"), TAKEN)
def test_an_import_refuses_a_provider_name_or_name_another_tool_holds(
    held, purged_broker, settings, chunk, field, value, other
):
    document = [api_tool(**{field: value}), api_tool(name="after", description="x")]
    job = import_document(document, "canonical", settings, chunk)
    [first, second] = job.items
    assert first["outcome"] == "rejected" and other in first["reason"], first
    assert second["outcome"] == "created"


@pytest.mark.parametrize("chunk", [0, 4], ids=["one-by-one", "bulk"])
def test_two_items_of_one_file_cannot_share_a_name_either(
    db, purged_broker, settings, chunk
):
    document = [api_tool(name=READ), api_tool(name=SHOWN), api_tool(name="x.y")]
    document.append(api_tool(name="other", provider_name="x_y"))
    job = import_document(document, "canonical", settings, chunk)
    assert [item["outcome"] for item in job.items] == [
        "created",
        "rejected",
        "created",
        "rejected",
    ]
    assert "provider name of tool 'src__files/read'" in job.items[1]["reason"]


@pytest.mark.parametrize("chunk", [0, 4], ids=["one-by-one", "bulk"])
def test_a_safe_name_never_takes_another_tool_s_provider_name(
    held, purged_broker, settings, chunk
):
    settings.QUIVER_IMPORT_CHUNK = chunk
    job = start_import(
        ensure_default_catalog(),
        [api_tool(name="src__files read")],
        "canonical",
        actor=None,
        names="rename",
    )
    claimed = claim_job(job.pk)
    assert claimed is not None
    [item] = run_import(claimed).items
    assert (item["outcome"], item["name"]) == ("created", "src__files_read_2")


def test_an_uploaded_file_and_the_dry_run_refuse_it_too(held, purged_broker):
    api = curator_api()
    document = [api_tool(name=SHOWN), api_tool(provider_name="rnodem_reset")]
    report = api.post(
        "/api/v1/catalogs/default/import?dry_run=true", document, format="json"
    ).json()
    assert report["counts"]["rejected"] == 2, report
    upload = SimpleUploadedFile(
        "tools.json", json.dumps(document).encode(), "application/json"
    )
    response = api.post(
        "/api/v1/catalogs/default/import?dry_run=true&format=canonical",
        {"file": upload},
        format="multipart",
    )
    assert response.json()["counts"]["rejected"] == 2
    assert Tool.objects.count() == 2


def test_the_console_import_s_dry_run_refuses_it(held, as_curator):
    data = {
        "catalog": "default",
        "format": "canonical",
        "names": "refuse",
        "text": json.dumps([api_tool(name=SHOWN)]),
    }
    page = html.unescape(as_curator.post("/import/", data).content.decode())
    assert "is the provider name of tool 'src__files/read'" in page
    assert Tool.objects.count() == 2


# Two writers at once -----------------------------------------------------------------


def test_the_database_refuses_a_second_holder_of_a_look(held):
    catalog = ensure_default_catalog()
    with pytest.raises(IntegrityError), transaction.atomic():
        ToolName.objects.create(
            catalog=catalog, look=look("src__fi1es_read"), tool=held["holder"]
        )


def test_a_writer_skipping_the_check_is_refused_by_the_database(held):
    """A path that forgot ``refuse`` (or lost a race to another writer) still
    cannot hold a look another tool holds: nothing of it is written."""
    other = make_tool(name="innocent")
    before = {"name": "innocent", "provider_name": "innocent"}
    with pytest.raises(ToolConflict), transaction.atomic():
        Tool.objects.filter(pk=other.pk).update(name=SHOWN)
        other.refresh_from_db()
        hold(other, before)
    assert Tool.objects.get(pk=other.pk).name == "innocent"


def test_of_two_writers_at_once_only_one_takes_the_name(
    transactional_db, purged_broker
):
    """One takes ``a_b`` as its name, the other as its provider name: whichever
    comes second is refused (neither name can be made another one)."""
    catalog = ensure_default_catalog()
    start = threading.Barrier(2)
    outcomes: dict[str, str] = {}
    specs = {
        "named": make_spec("a_b", provider_name="a_b_tool"),
        "offered": make_spec("zz_tool", provider_name="a_b"),
    }

    def write(which: str) -> None:
        try:
            start.wait(10)
            create_tool(catalog, specs[which], actor=None)
            outcomes[which] = "created"
        except (ValidationError, ToolConflict) as exc:
            outcomes[which] = f"refused: {exc}"
        finally:
            connection.close()

    writers = [threading.Thread(target=write, args=(w,)) for w in specs]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(30)
    assert sorted(o.split(":")[0] for o in outcomes.values()) == [
        "created",
        "refused",
    ], outcomes
    assert Tool.objects.count() == 1
    assert Catalog.objects.get(pk=catalog.pk).tools.count() == 1


# Pairs stored before the rule ------------------------------------------------------


def test_a_pair_stored_before_the_rule_is_reported_and_blocks_the_name(held):
    stored_past_the_rules(make_tool(name="other"), name=SHOWN)
    found = checks.run_checks(tags=[checks.Tags.database], databases=["default"])
    [message] = [m for m in found if m.id == "catalog.W003"]
    assert "1 name(s) are held by more than one tool" in message.msg
    response = curator_api().post(
        "/api/v1/tools/", api_tool(name="src__fi1es_read"), format="json"
    )
    assert response.status_code == 400
    assert "several tools of this catalog held" in response.json()["detail"]


def test_renaming_one_of_a_pair_away_settles_the_name_on_the_other(held):
    other = stored_past_the_rules(make_tool(name="other"), name=SHOWN)
    [row] = ToolName.objects.filter(look=look(SHOWN))
    assert row.tool_id is None
    spec = tool_to_spec(other)
    spec.name = "other"
    update_tool(other, spec, actor=None)
    [row] = ToolName.objects.filter(look=look(SHOWN))
    assert row.tool_id == held["read"].pk
