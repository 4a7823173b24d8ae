"""Tool names keep a safe character set and never look like another tool's name.

Every path that makes or renames a tool (API create and update, the console's
form, the Django admin, imports one by one and in bulk) refuses a name outside
MCP's tool-name format (``A-Z a-z 0-9 _ - . /``, 1 to 128 characters), with '..'
or an empty or '.' part between slashes, and a name whose UTS #39 skeleton is
another tool's name or original name in the same catalog, naming the rule or both
names; names stored before the rules are reported by a system check that
``migrate`` runs, and stay editable.
"""

from __future__ import annotations

import html
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.core import checks

from catalog.models import Catalog, Tool
from catalog.naming import confusable_names, name_problems, skeleton
from catalog.services import create_catalog, ensure_default_catalog
from catalog.services.imports import run_import, start_import
from jobs.models import Job
from jobs.services import claim_job
from tests.conftest import worker_env
from tests.factories import (
    make_tool,
    make_user,
    stored_past_the_rules,
    weather_schema,
)

pytestmark = pytest.mark.django_db

# (stored name, a different name that looks the same)
CONFUSABLE = [
    ("list_files", "list_fil\u0435s"),  # Cyrillic ie
    ("paypal", "p\u0430yp\u0430l"),  # Cyrillic a
    ("copy", "c\u03bfpy"),  # Greek omicron
    ("list", "\uff4cist"),  # fullwidth l
    ("dir", "\u0501ir"),  # Cyrillic komi de
    ("a-b", "a\u2010b"),  # Unicode hyphen
    ("rn_tool", "m_tool"),  # ASCII: rn and m
    ("file1", "filel"),  # ASCII: 1 and l
    ("Index", "lndex"),  # ASCII: I and l
    ("get_0", "get_O"),  # ASCII: 0 and O
    ("all", "a11"),
]
ASCII_CONFUSABLE = [pair for pair in CONFUSABLE if pair[1].isascii()]

BAD_NAMES = [
    "get weather",
    "a\\b",
    "../etc",
    "a..b",
    "<b>x</b>",
    "x&amp;y",
    "tool;rm",
    "a:b",
    "a@b",
    "a'b",
    'a"b',
    "caf\u00e9",
    "\u540d\u524d",
    "tab\tname",
    "/leading",
    "trailing/",
    "a//b",
    "./x",
    "a/./b",
    "a/.",
    ".",
    "x" * 129,
]
# MCP's tool-name format (SEP-986): letters, digits, _ - . /, 1 to 128
# characters, any of them first (the benchmark catalogs' names among them).
GOOD_NAMES = [
    "get_weather",
    "files.read",
    "v2-search",
    "A",
    "9lives",
    "x" * 128,
    "a/b",
    "user-profile/update",
    "admin.tools.list",
    "__get_all_user_list",
    "-rf",
    ".hidden",
    "_private",
    "huggingface_facebook/bart-base",
]


def api_tool(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "parameters": weather_schema(), **fields}


def legacy_tool(name: str, catalog: Catalog | None = None) -> Tool:
    """A tool whose name was stored before the rules (written past the services)."""
    tool = make_tool(catalog, name=f"legacy_{Tool.objects.count()}")
    return stored_past_the_rules(tool, name=name)


def import_items(document: list[Any], settings: Any, chunk: int) -> Job:
    settings.QUIVER_IMPORT_CHUNK = chunk
    settings.QUIVER_IMPORT_EMBED_LAG = 0
    catalog = ensure_default_catalog()
    job = start_import(catalog, document, "canonical", actor=make_user("importer"))
    claimed = claim_job(job.pk)
    assert claimed is not None
    return run_import(claimed)


# The rules themselves ----------------------------------------------------------


@pytest.mark.parametrize("name", GOOD_NAMES)
def test_letters_digits_and_underscore_dot_hyphen_are_allowed(name):
    assert name_problems(name) == []


@pytest.mark.parametrize("name", BAD_NAMES)
def test_anything_else_is_refused_naming_the_rule(name):
    problems = name_problems(name)
    assert problems
    rules = (
        "name: may hold only the letters",
        "name: must not contain '..'",
        "name: each '/' must stand between two non-empty parts other than '.'",
        "name: must be at most 128 characters (MCP's limit); this one has 129",
    )
    assert all(p.startswith(rules) for p in problems)


def test_the_refusal_names_the_characters_that_broke_the_rule():
    (problem,) = name_problems("caf\u00e9 x")
    assert problem.endswith("found U+00E9 LATIN SMALL LETTER E WITH ACUTE, ' '")


@pytest.mark.parametrize(("stored", "lookalike"), CONFUSABLE)
def test_confusable_names_share_a_skeleton(stored, lookalike):
    assert skeleton(stored) == skeleton(lookalike)
    assert confusable_names(lookalike, ["other", stored]) == [stored]


@pytest.mark.parametrize(
    ("one", "two"),
    [("list_files", "list_file"), ("a.b", "a_b"), ("Tool", "tool"), ("d", "cl")],
)
def test_names_that_look_different_are_not_confusable(one, two):
    assert confusable_names(one, [two]) == []


# Every write path ----------------------------------------------------------------


def refusal_names_both(message: str, stored: str, lookalike: str) -> bool:
    return (
        f"name: {ascii(lookalike)} is confusable with {ascii(stored)}" in message
        and "UTS #39" in message
    )


@pytest.mark.parametrize(("stored", "lookalike"), CONFUSABLE)
def test_the_api_refuses_a_confusable_new_tool_naming_both(with_key, stored, lookalike):
    make_tool(name=stored)
    response = with_key("curator").post(
        "/api/v1/tools/", api_tool(lookalike), format="json"
    )
    assert response.status_code == 400
    messages = response.json()["fields"]["name"]
    assert any(refusal_names_both(m, stored, lookalike) for m in messages)
    assert Tool.objects.count() == 1


@pytest.mark.parametrize(("stored", "lookalike"), CONFUSABLE)
def test_the_api_refuses_a_rename_to_a_confusable_name(with_key, stored, lookalike):
    make_tool(name=stored)
    other = make_tool(name="innocent")
    response = with_key("curator").patch(
        f"/api/v1/tools/{other.pk}/", {"name": lookalike}, format="json"
    )
    assert response.status_code == 400
    messages = response.json()["fields"]["name"]
    assert any(refusal_names_both(m, stored, lookalike) for m in messages)
    assert Tool.objects.get(pk=other.pk).name == "innocent"


@pytest.mark.parametrize("name", BAD_NAMES)
def test_the_api_refuses_a_bad_name_on_create_and_on_rename(with_key, name):
    client = with_key("curator")
    response = client.post("/api/v1/tools/", api_tool(name), format="json")
    assert response.status_code == 400
    assert "name" in response.json()["fields"]
    tool = make_tool(name="fine")
    response = client.patch(f"/api/v1/tools/{tool.pk}/", {"name": name}, format="json")
    assert response.status_code == 400
    assert "name" in response.json()["fields"]
    assert list(Tool.objects.values_list("name", flat=True)) == ["fine"]


def test_a_confusable_name_in_another_catalog_is_allowed(with_key):
    make_tool(create_catalog("other", "Other"), name="list_files")
    response = with_key("curator").post(
        "/api/v1/tools/", api_tool("list_fi1es"), format="json"
    )
    assert response.status_code == 201, response.json()


def console_form(name: str) -> dict[str, str]:
    return {
        "catalog": "default",
        "name": name,
        "description": "Typed by hand.",
        "parameters": json.dumps(weather_schema()),
        "risk_level": "low",
        "status": "active",
        "cost_per_call": "0",
        "currency": "USD",
    }


@pytest.mark.parametrize(("stored", "lookalike"), CONFUSABLE[:4] + ASCII_CONFUSABLE)
def test_the_console_form_refuses_a_confusable_name_naming_both(
    as_curator, stored, lookalike
):
    make_tool(name=stored)
    response = as_curator.post("/tools/new/", console_form(lookalike))
    page = html.unescape(response.content.decode())
    assert response.status_code == 200
    assert "The tool was not saved." in page
    assert refusal_names_both(page, stored, lookalike)
    assert Tool.objects.count() == 1


@pytest.mark.parametrize("name", ["get weather", "a:b", "<b>x</b>", "a..b", "a//b"])
def test_the_console_form_refuses_a_bad_name_on_create_and_on_edit(as_curator, name):
    response = as_curator.post("/tools/new/", console_form(name))
    assert "name: " in html.unescape(response.content.decode())
    tool = make_tool(name="fine")
    data = console_form(name)
    del data["catalog"]
    response = as_curator.post(f"/tools/{tool.pk}/edit/", data)
    assert response.status_code == 200
    assert "name: " in html.unescape(response.content.decode())
    assert list(Tool.objects.values_list("name", flat=True)) == ["fine"]


def test_the_admin_form_refuses_a_confusable_name(client, admin_user):
    make_tool(name="list_files")
    client.force_login(admin_user)
    data = console_form("list_fil\u0435s") | {
        "catalog": ensure_default_catalog().pk,
        "provider_name": "lookalike",
        "tags": "[]",
        "examples": "[]",
        "returns": "",
        "role_tags": "[]",
    }
    response = client.post("/admin/catalog/tool/add/", data)
    page = html.unescape(response.content.decode())
    assert refusal_names_both(page, "list_files", "list_fil\u0435s")
    assert Tool.objects.count() == 1


@pytest.mark.parametrize("chunk", [0, 4], ids=["one-by-one", "bulk"])
def test_imports_refuse_each_bad_or_confusable_item_with_its_reason(
    transactional_db, purged_broker, settings, chunk
):
    make_tool(name="list_files")
    document = [
        api_tool("get_weather"),
        api_tool("list_fil\u0435s"),
        api_tool("get weather"),
        api_tool("m_tool"),
        api_tool("rn_tool"),  # confusable with the item just before it
        api_tool("a..b"),
    ]
    job = import_items(document, settings, chunk)
    outcomes = [(item["name"], item["outcome"]) for item in job.items]
    assert outcomes == [
        ("get_weather", "created"),
        ("list_fil\u0435s", "rejected"),
        ("get weather", "rejected"),
        ("m_tool", "created"),
        ("rn_tool", "rejected"),
        ("a..b", "rejected"),
    ]
    reasons = [item["reason"] for item in job.items]
    assert refusal_names_both(reasons[1], "list_files", "list_fil\u0435s")
    assert "name: may hold only the letters" in reasons[1]
    assert "found ' '" in reasons[2]
    assert refusal_names_both(reasons[4], "m_tool", "rn_tool")
    assert "'..'" in reasons[5]
    assert sorted(Tool.objects.values_list("name", flat=True)) == [
        "get_weather",
        "list_files",
        "m_tool",
    ]


# Names stored before the rules ---------------------------------------------------


def test_a_tool_with_a_stored_legacy_name_stays_editable_under_that_name(with_key):
    tool = legacy_tool("Legacy Name / v1")
    response = with_key("curator").patch(
        f"/api/v1/tools/{tool.pk}/", {"description": "Still here."}, format="json"
    )
    assert response.status_code == 200, response.json()
    assert Tool.objects.get(pk=tool.pk).description == "Still here."


@pytest.mark.parametrize("chunk", [0, 4], ids=["one-by-one", "bulk"])
def test_re_importing_a_legacy_name_updates_it_rather_than_refusing(
    transactional_db, purged_broker, settings, chunk
):
    legacy_tool("Legacy Name")
    job = import_items([api_tool("Legacy Name", description="New.")], settings, chunk)
    assert [item["outcome"] for item in job.items] == ["updated"]


def test_stored_names_breaking_the_rules_are_reported_by_the_database_check():
    make_tool(name="list_files")
    legacy_tool("list_fil\u0435s")
    legacy_tool("get weather")
    found = checks.run_checks(tags=[checks.Tags.database], databases=["default"])
    by_id = {message.id: message.msg for message in found}
    assert "2 stored tool name(s) break" in by_id["catalog.W001"]
    assert "default/'get weather'" in by_id["catalog.W001"]
    assert "'list_fil\\u0435s'" in by_id["catalog.W002"]
    assert "'list_files'" in by_id["catalog.W002"]
    assert Tool.objects.filter(name="get weather").exists()  # reported, not changed


def test_the_check_is_silent_on_clean_data_and_without_a_database():
    make_tool(name="list_files")
    make_tool(name="list_file")
    found = checks.run_checks(tags=[checks.Tags.database], databases=["default"])
    assert not [m for m in found if m.id and m.id.startswith("catalog.")]
    found = checks.run_checks(tags=[checks.Tags.database])
    assert not [m for m in found if m.id and m.id.startswith("catalog.")]


# Provider names: what a model is offered ------------------------------------------


def test_a_given_provider_name_confusable_with_another_tool_s_is_refused(with_key):
    make_tool(name="list_files")
    response = with_key("curator").post(
        "/api/v1/tools/",
        api_tool("listing", provider_name="list_fi1es"),
        format="json",
    )
    assert response.status_code == 400
    (message,) = response.json()["fields"]["provider_name"]
    assert message.startswith("provider_name: 'list_fi1es' is confusable with")
    assert "'list_files'" in message


def test_a_tool_may_change_its_own_provider_name_to_a_lookalike_of_its_old_one(
    with_key,
):
    tool = make_tool(name="files", provider_name="fi1es")
    response = with_key("curator").patch(
        f"/api/v1/tools/{tool.pk}/", {"provider_name": "files"}, format="json"
    )
    assert response.status_code == 200, response.json()


@pytest.mark.parametrize("chunk", [0, 4], ids=["one-by-one", "bulk"])
def test_imports_refuse_a_lookalike_provider_name_but_not_a_freed_one(
    transactional_db, purged_broker, settings, chunk
):
    make_tool(name="holder", provider_name="held_name")
    document = [
        api_tool("copycat", provider_name="he1d_name"),
        api_tool("holder", provider_name="other_name"),  # gives held_name up
        api_tool("newcomer", provider_name="he1d_name"),  # then free to look like it
    ]
    job = import_items(document, settings, chunk)
    assert [item["outcome"] for item in job.items] == [
        "rejected",
        "updated",
        "created",
    ]
    assert (
        "provider_name: 'he1d_name' is confusable with 'held_name'"
        in (job.items[0]["reason"])
    )


def test_migrate_reports_stored_names_breaking_the_rules(transactional_db):
    legacy_tool("get weather")
    env = worker_env()
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    result = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=Path(__file__).resolve().parents[2],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr
    output = result.stdout + result.stderr
    assert "catalog.W001" in output
    assert "default/'get weather'" in output
    assert Tool.objects.filter(name="get weather").exists()
