"""The contract of every operation Quiver serves, one entry per URL name and
method (tests/access/endpoints.py finds them in the URL configuration; an
operation without an entry here fails tests/access/test_every_endpoint.py).

A write says who may make it, the body that person or key sends, the audit
event its one request writes (or why it writes none), and whether its object
belongs to a catalog (an outsider is then the same persona limited to another
catalog) or not (``outsider`` names a signed-in persona without the right).
Personas (tests/access/endpoint_world.py): the scopes ``agent``, ``curator``,
``compliance``, ``admin`` are API keys on the API and people on the console;
``member`` and ``approver`` are people; ``-out`` is the same limited to the
catalog ``elsewhere``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.core.files.uploadedfile import SimpleUploadedFile

from tests.factories import weather_schema

OK = (200, 201, 202, 204, 302)
FORM_REFUSED = (200, 400, 403, 404)  # the form again, naming what it refuses
HOME = "a redirect to the tool list, whatever the method"
EVALUATES = (
    "queues an evaluation: a job that measures the catalog and changes nothing "
    "anyone may see or do"
)
Body = Any  # a dict, or a function of the world's ids giving one


@dataclass(frozen=True)
class Write:
    who: str
    body: Body = None
    audit: str | None = None  # the event type of the request's row
    why: str = ""  # why the request writes no audit row (audit None)
    scoped: bool = True
    outsider: str = ""  # for an unscoped write: who is refused
    # A write to the caller's own rows that anyone signed in may make (there is
    # no outsider): why it reaches nobody else.
    anyone: str = ""
    args: dict[str, str] = field(default_factory=dict)  # URL kwarg -> world id
    query: str = ""  # formatted with the world's ids
    ok: tuple[int, ...] = OK
    # What the outsider gets: refused, or (a batch, a form naming a catalog it
    # cannot see, a bulk filter) an answer that names the refusal, unchanged.
    hidden: tuple[int, ...] = (403, 404)
    cost: int = 1  # of the caller's rate limit


@dataclass(frozen=True)
class Read:
    who: str
    scoped: bool = True
    outsider: str = ""
    args: dict[str, str] = field(default_factory=dict)
    query: str = ""
    public: bool = False  # anyone, signed in or not
    ok: tuple[int, ...] = (200,)
    # A list an outsider may read too: what of the catalog it must not show.
    hides: str = ""


@dataclass(frozen=True)
class Other:
    """An operation that is neither: what it is, and the check it gets."""

    why: str
    anonymous: tuple[int, ...] = ()  # what an anonymous caller gets
    args: dict[str, str] = field(default_factory=dict)
    query: str = ""


Contract = Write | Read | Other

TOOL = {
    "catalog": "default",
    "name": "lookup_order",
    "description": "Look up an order by its number.",
    "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
}
CALL = {
    "type": "function_call",
    "name": "get_weather",
    "arguments": '{"city": "Oslo"}',
    "call_id": "c1",
}
SLUG = {"slug": "slug"}
MAPPING = {"pk": "mapping"}
CONSOLE_MAPPING = {"mapping_id": "mapping"}
SIGN_IN = "sign_in_settings"
CONNECTED_APP = "World probe"  # the member's OAuth connection
CONSENT = (
    "the consent page: a signed-in person approves an OAuth client, the grant's "
    "own checks (tests/oauth/test_authorization_server.py)"
)
MACHINE = (
    "an OAuth machine endpoint: a client's own credentials (a code, a refresh "
    "token, PKCE) in the body, no session; tested by tests/oauth"
)
TOOL_ID = {"pk": "tool"}
SOURCE = {"pk": "source"}
PERSONAL = {"source_id": "personal_source"}
UPSTREAM_AUTH = "upstream_auth"
HOOK = {"pk": "webhook"}
CONSOLE_TOOL = {"tool_id": "tool"}
REVIEW = {"pk": "review"}
CONSOLE_REVIEW = {"review_id": "review"}


def tool_form(**overrides: str) -> dict[str, str]:
    """What the console's tool form posts."""
    return {
        "catalog": "default",
        "name": "lookup_order",
        "description": "Look up an order by its number.",
        "parameters": json.dumps(weather_schema()),
        "safe": "on",
        "risk_level": "low",
        "status": "active",
        "cost_per_call": "0.002",
        "currency": "USD",
        **overrides,
    }


def edit_form(ids: dict[str, Any]) -> dict[str, str]:
    """The tool form confirmed: with the token its preview would show."""
    from catalog.forms import ToolForm
    from catalog.models import Tool
    from catalog.views.edit import preview_token

    tool = Tool.objects.get(pk=ids["tool"])
    data = tool_form(name="spare", description="Edited.")
    del data["catalog"]
    form = ToolForm(data)
    assert form.is_valid(), form.errors
    return {**data, "confirm": preview_token(tool, form.to_spec(), "")}


def labels_file(ids: dict[str, Any]) -> dict[str, Any]:
    line = json.dumps({"query": "rain in Oslo", "tools": ["get_weather"]})
    return {"file": SimpleUploadedFile("labels.jsonl", line.encode())}


API: dict[str, Contract] = {
    # catalogs, tools, jobs, keys
    "GET catalog-list": Read(
        "agent", scoped=False, outsider="agent-out", hides='"slug":"default"'
    ),
    "POST catalog-list": Write(
        "curator",
        {"slug": "beta", "name": "Beta"},
        "catalog_created",
        scoped=False,
        outsider="curator-out",
    ),
    "GET catalog-detail": Read("agent", args=SLUG),
    "GET catalog-changes": Read("curator", args=SLUG),
    "GET catalog-export": Read("agent", args=SLUG, query="format=mcp"),
    "POST catalog-import-tools": Write(
        "curator",
        [TOOL],
        why="queues an import job: its worker writes each tool's row",
        args=SLUG,
    ),
    "GET tool-list": Read("agent", scoped=False, outsider="agent-out", hides="spare"),
    "POST tool-list": Write("curator", TOOL, "tool_changed"),
    "POST tool-bulk": Write(
        "curator",
        {"filter": {"catalog": "default"}, "set": {"status": "deprecated"}},
        "tool_changed",
        hidden=(200,),  # its filter's catalog matches nothing of theirs
    ),
    "GET tool-export": Read("agent", scoped=False, outsider="agent-out", hides="spare"),
    "GET tool-detail": Read("agent", args=TOOL_ID),
    "PUT tool-detail": Write(
        "curator", {**TOOL, "name": "spare"}, "tool_changed", args=TOOL_ID
    ),
    "PATCH tool-detail": Write(
        "curator", {"description": "New."}, "tool_changed", args=TOOL_ID
    ),
    "DELETE tool-detail": Write("curator", None, "tool_changed", args=TOOL_ID),
    "GET tool-history": Read("agent", args=TOOL_ID),
    "GET job-list": Read(
        "curator", scoped=False, outsider="curator-out", hides='"catalog":"default"'
    ),
    "GET job-detail": Read("curator", args={"pk": "job"}),
    "GET client-list": Read("admin", scoped=False, outsider="curator"),
    "POST client-list": Write(
        "admin",
        {"name": "bot", "scope": "agent", "catalogs": "*", "rate_limit_per_minute": 1},
        "client_created",
        scoped=False,
        outsider="curator",
    ),
    "GET client-detail": Read(
        "admin", scoped=False, outsider="curator", args={"pk": "client"}
    ),
    "PATCH client-detail": Write(
        "admin",
        {"roles": ["edited"]},
        "client_changed",
        scoped=False,
        outsider="curator",
        args={"pk": "client"},
    ),
    "POST client-revoke": Write(
        "admin",
        None,
        "client_revoked",
        scoped=False,
        outsider="curator",
        args={"pk": "client"},
    ),
    "POST client-rotate": Write(
        "admin",
        None,
        "client_rotated",
        scoped=False,
        outsider="curator",
        args={"pk": "client"},
    ),
    "GET api-root": Read("agent", scoped=False),
    # sign-in settings: people who are admins (an API key manages no person)
    "GET claim-mapping-list": Read("superuser", scoped=False, outsider="member"),
    "POST claim-mapping-list": Write(
        "superuser",
        {"value": "ops-team", "groups": ["curator"], "catalogs": ["default"]},
        SIGN_IN,
        scoped=False,
        outsider="admin",  # the admin key: people are managed by people
    ),
    "GET claim-mapping-detail": Read(
        "superuser", scoped=False, outsider="admin", args=MAPPING
    ),
    "PATCH claim-mapping-detail": Write(
        "superuser",
        {"groups": ["curator"], "catalogs": ["default", "elsewhere"]},
        SIGN_IN,
        scoped=False,
        outsider="admin",
        args=MAPPING,
    ),
    "DELETE claim-mapping-detail": Write(
        "superuser", None, SIGN_IN, scoped=False, outsider="member", args=MAPPING
    ),
    "GET sign-in-policy": Read("superuser", scoped=False, outsider="member"),
    "PATCH sign-in-policy": Write(
        "superuser",
        {"password_login": True},
        SIGN_IN,
        scoped=False,
        outsider="admin-out",  # an admin of some catalogs only
    ),
    # selection
    "POST select": Write(
        "agent", {"query": "weather", "scorer": "keyword"}, "selection"
    ),
    "POST select-batch": Write(
        "agent",
        {"requests": [{"query": "weather", "scorer": "keyword"}]},
        "selection",
        hidden=(200,),  # each item its own 404
    ),
    "POST validate": Write(
        "agent",
        {"tool": "get_weather", "arguments": {"city": "Oslo"}},
        "validation",
    ),
    "POST tool-calls-validate": Write("agent", {"output": CALL}, "validation"),
    "GET selection-settings": Read("curator", args=SLUG),
    "PUT selection-settings": Write(
        "curator", {"settings": {"min_combined_score": 0.2}}, "settings", args=SLUG
    ),
    "GET selection-settings-versions": Read("curator", args=SLUG),
    "POST selection-settings-restore": Write(
        "curator",
        {},
        "settings",
        args={**SLUG, "version": "settings_version"},
    ),
    # audit
    "GET audit-list": Read("compliance", scoped=False, outsider="curator"),
    "GET audit-detail": Read("compliance", args={"pk": "event"}),
    "GET audit-verify": Read("compliance", scoped=False, outsider="curator"),
    "GET audit-export": Read("compliance", scoped=False, outsider="curator"),
    "GET audit-why-not": Read(
        "compliance", args={"pk": "event"}, query="tool=get_weather"
    ),
    # sources
    "GET catalog-sources": Read("admin", args=SLUG),
    "POST catalog-sources": Write(
        "admin",
        {"name": "more", "url": "http://127.0.0.1:9/more"},
        "source_changed",
        args=SLUG,
    ),
    "GET source-detail": Read("admin", args=SOURCE),
    "PATCH source-detail": Write(
        "admin", {"timeout_seconds": 12}, "source_changed", args=SOURCE
    ),
    "DELETE source-detail": Write("admin", None, "source_changed", args=SOURCE),
    "POST source-sync": Write(
        "admin",
        None,
        why="queues a sync job: its worker writes each tool's change",
        args=SOURCE,
    ),
    "POST source-test": Write(
        "admin",
        None,
        why="a connection test: reads the upstream's tool list, changes nothing",
        args=SOURCE,
    ),
    # reviews of tool definitions (held ones: no agent reads them)
    "GET review-list": Read(
        "curator", scoped=False, outsider="curator-out", hides="list_files"
    ),
    "GET review-detail": Read("curator", args=REVIEW),
    "POST review-approve": Write(
        "curator", {}, "tool_review", args={"pk": "review_new"}
    ),
    "POST review-allow": Write(
        "curator", {"reason": "an honest setup tool"}, "tool_review", args=REVIEW
    ),
    "POST review-refuse": Write(
        "curator", {"reason": "it instructs the model"}, "tool_review", args=REVIEW
    ),
    # approvals and calls
    "GET approval-list": Read("approver", scoped=False, outsider="curator"),
    "GET approval-detail": Read("approver", args={"pk": "approval"}),
    "POST approval-approve": Write(
        "approver", {"reason": "ok"}, "approval", args={"pk": "approval"}
    ),
    "POST approval-deny": Write(
        "approver", {"reason": "no"}, "approval", args={"pk": "approval"}
    ),
    "POST tool-calls-execute": Write(
        "agent",
        {
            "name": "files.delete_file",
            "catalog": "default",
            "arguments": {"city": "Oslo"},
        },
        "approval",
    ),
    # webhooks
    "GET catalog-webhooks": Read("admin", args=SLUG),
    "POST catalog-webhooks": Write(
        "admin",
        {"name": "pager", "url": "http://127.0.0.1:9/pager"},
        "webhook_changed",
        args=SLUG,
    ),
    "GET webhook-detail": Read("admin", args=HOOK),
    "PATCH webhook-detail": Write(
        "admin", {"active": False}, "webhook_changed", args=HOOK
    ),
    "DELETE webhook-detail": Write("admin", None, "webhook_changed", args=HOOK),
    "GET webhook-deliveries": Read("admin", args=HOOK),
    "POST webhook-replay": Write(
        "admin",
        None,
        "webhook_changed",
        args={**HOOK, "delivery_id": "delivery"},
    ),
    "POST webhook-rotate": Write("admin", {}, "webhook_changed", args=HOOK),
    # learning
    "GET label-list": Read("curator", args=SLUG),
    "POST label-list": Write(
        "curator",
        {"labels": [{"query": "rain in Oslo", "tools": ["get_weather"]}]},
        "labels_changed",
        args=SLUG,
    ),
    "DELETE label-list": Write(
        "curator", None, "labels_changed", args=SLUG, query="all=true"
    ),
    "GET label-detail": Read("curator", args={**SLUG, "label_id": "label"}),
    "DELETE label-detail": Write(
        "curator", None, "labels_changed", args={**SLUG, "label_id": "label"}
    ),
    "POST label-review": Write(
        "curator",
        lambda ids: {"ids": [ids["label"]], "status": "rejected"},
        "labels_changed",
        args=SLUG,
    ),
    "POST label-proposals": Write(
        "curator",
        {},
        why="looks for labels in recent use: a row when it proposes any, and this "
        "world has no call to learn from",
        args=SLUG,
    ),
    "GET evaluation-list": Read("curator", args=SLUG),
    "POST evaluation-list": Write(
        "curator",
        {},
        why=EVALUATES,
        args=SLUG,
    ),
    "GET evaluation-detail": Read("curator", args={**SLUG, "run_id": "run"}),
    "GET confusable": Read("curator", args=SLUG),
    "POST learn": Write(
        "curator",
        {},
        why="queues a learning job; applying what it learns is a settings change, "
        "audited then",
        args=SLUG,
    ),
    "GET learn-detail": Read("curator", args={**SLUG, "version": "learnt"}),
    "POST learn-apply": Write(
        "curator",
        {"accept_regression": "the endpoint contract's own"},
        "settings",
        args={**SLUG, "version": "learnt"},
    ),
}

CONSOLE: dict[str, Contract] = {
    "GET console:home": Other(HOME, anonymous=(302,)),
    "POST console:home": Other(HOME, anonymous=(302,)),
    "PUT console:home": Other(HOME, anonymous=(302,)),
    "PATCH console:home": Other(HOME, anonymous=(302,)),
    "DELETE console:home": Other(HOME, anonymous=(302,)),
    "GET console:tool-list": Read(
        "member", scoped=False, outsider="member-out", hides="spare"
    ),
    "POST console:first-steps-dismiss": Write(
        "admin",
        {},
        why="a preference: the first steps hidden for this person, which changes "
        "nothing anyone may see or do",
        scoped=False,
        anyone="each person hides the panel for themselves alone",
    ),
    "GET console:tool-export": Read(
        "member", scoped=False, outsider="member-out", hides="spare"
    ),
    "POST console:tool-bulk": Write(
        "curator",
        {
            "scope": "filtered",
            "filter_query": "catalog=default&q=spare",
            "action": "status:disabled",
            "confirm": "1",
        },
        "tool_changed",
        hidden=(400,),  # a filter value it is not offered is refused
    ),
    "GET console:tool-create": Read("curator", scoped=False, outsider="member"),
    "POST console:tool-create": Write(
        "curator", tool_form(), "tool_changed", hidden=FORM_REFUSED
    ),
    "POST console:validate-schema": Other(
        "checks a schema typed in the form: reads nothing stored, writes nothing",
        anonymous=(302,),
    ),
    "GET console:tool-detail": Read("member", args=CONSOLE_TOOL),
    "GET console:tool-edit": Read("curator", args=CONSOLE_TOOL),
    "POST console:tool-edit": Write(
        "curator", edit_form, "tool_changed", args=CONSOLE_TOOL
    ),
    "POST console:tool-status": Write(
        "curator", {"status": "deprecated"}, "tool_changed", args=CONSOLE_TOOL
    ),
    "POST console:tool-delete": Write("curator", {}, "tool_changed", args=CONSOLE_TOOL),
    "GET console:tool-history": Read("member", args=CONSOLE_TOOL),
    "GET console:tool-diff": Read(
        "member", args=CONSOLE_TOOL, query="a={change}&b={change2}"
    ),
    "GET console:review-list": Read(
        "curator", scoped=False, outsider="curator-out", hides="list_files"
    ),
    "GET console:review-detail": Read("curator", args=CONSOLE_REVIEW),
    "POST console:review-decide": Write(
        "curator",
        {"reason": "it instructs the model"},
        "tool_review",
        args={**CONSOLE_REVIEW, "decision": "refuse"},
    ),
    "GET console:import": Read("curator", scoped=False, outsider="member"),
    "POST console:import": Write(
        "curator",
        {"catalog": "default", "document": json.dumps([TOOL])},
        why="a dry run: nothing is written until its report is confirmed, and "
        "then a job's worker writes each tool's row",
        hidden=FORM_REFUSED,
    ),
    "GET console:job-list": Read(
        "curator", scoped=False, outsider="curator-out", hides="spare"
    ),
    "GET console:job-detail": Read("curator", args={"job_id": "job"}),
    "GET console:catalog-list": Read(
        "member", scoped=False, outsider="member-out", hides='data-catalog="default"'
    ),
    "POST console:catalog-list": Write(
        "curator",
        {"slug": "ops", "name": "Operations"},
        "catalog_created",
        scoped=False,
        outsider="curator-out",
    ),
    "GET console:catalog-changes": Read("curator", args=SLUG),
    "GET console:change-detail": Read("curator", args={**SLUG, "change_id": "change"}),
    "POST console:catalog-reindex": Write(
        "curator",
        {},
        why="queues a re-embedding job: the same tools, their vectors made again",
        args=SLUG,
    ),
    "GET identity:client-list": Read("admin", scoped=False, outsider="curator"),
    "POST identity:client-list": Write(
        "admin",
        {"name": "bot", "scope": "agent", "all_catalogs": "on"},
        "client_created",
        scoped=False,
        outsider="curator",
    ),
    "GET identity:client-edit": Read(
        "admin", scoped=False, outsider="curator", args={"client_id": "client"}
    ),
    "POST identity:client-edit": Write(
        "admin",
        {"roles": "edited", "all_catalogs": "on"},
        "client_changed",
        scoped=False,
        outsider="curator",
        args={"client_id": "client"},
    ),
    "POST identity:client-rotate": Write(
        "admin",
        {},
        "client_rotated",
        scoped=False,
        outsider="curator",
        args={"client_id": "client"},
    ),
    "POST identity:client-revoke": Write(
        "admin",
        {},
        "client_revoked",
        scoped=False,
        outsider="curator",
        args={"client_id": "client"},
    ),
    "GET identity:person-list": Read("admin", scoped=False, outsider="curator"),
    "POST identity:person-list": Write(
        "admin",
        {"username": "reader", "groups": ["compliance"], "all_catalogs": "on"},
        "access_changed",
        scoped=False,
        outsider="curator",
    ),
    "GET identity:person-edit": Read(
        "admin", scoped=False, outsider="curator", args={"person_id": "person"}
    ),
    "POST identity:person-edit": Write(
        "admin",
        {"groups": ["curator"], "all_catalogs": "on"},
        "access_changed",
        scoped=False,
        outsider="curator",
        args={"person_id": "person"},
    ),
    "POST identity:person-active": Write(
        "admin",
        {"active": "0"},
        "access_changed",
        scoped=False,
        outsider="curator",
        args={"person_id": "person"},
    ),
    # selection
    "GET selection:try-it": Read("member", scoped=False, outsider=""),
    "POST selection:try-it": Write(
        "member",
        {"catalog": "default", "query": "weather"},
        "selection",
        hidden=FORM_REFUSED,
    ),
    "GET selection:trust": Read("curator", args=SLUG),
    "POST selection:trust": Write(
        "curator",
        {
            "review_new_tools": "always",
            "risky_change": "suspend",
            "results_secrets": "redact",
            "results_injection": "block",
            "results_pii": "redact",
            "reason": "hostile results are withheld",
        },
        "settings",
        args=SLUG,
    ),
    "GET selection:settings": Read("curator", args=SLUG),
    "POST selection:settings": Write(
        "curator",
        {"settings": json.dumps({"min_combined_score": 0.2})},
        "settings",
        args=SLUG,
    ),
    "POST selection:settings-try": Write(
        "curator",
        {"try_query": "weather", "settings": json.dumps({"min_combined_score": 0.2})},
        "selection",
        args=SLUG,
        cost=2,  # two answers, two rows
    ),
    "POST selection:settings-evaluate": Write(
        "curator",
        {"settings": json.dumps({"min_combined_score": 0.2})},
        why=EVALUATES,
        args=SLUG,
        cost=2,
    ),
    "GET selection:settings-history": Read("curator", args=SLUG),
    "POST selection:settings-restore": Write(
        "curator", {}, "settings", args={**SLUG, "version": "settings_version"}
    ),
    # audit
    "GET audit:event-list": Read("compliance", scoped=False, outsider="curator"),
    "GET audit:verify": Read("compliance", scoped=False, outsider="curator"),
    "POST audit:verify": Other(
        "runs the chain check (a read: seals what is pending, changes no record)",
        anonymous=(302,),
    ),
    "GET audit:dashboard": Read("compliance", scoped=False, outsider="curator"),
    "GET audit:export": Read("compliance", scoped=False, outsider="curator"),
    "GET audit:event-detail": Read("compliance", args={"event_id": "event"}),
    "GET audit:why-not": Read(
        "compliance", args={"event_id": "event"}, query="tool=get_weather"
    ),
    "GET audit:change-log": Read("compliance", scoped=False, outsider="curator"),
    "GET audit:tool-version": Read(
        "compliance",
        args={"catalog": "slug", "name": "spare_name", "version": "one"},
    ),
    "GET audit:tool-at-selection": Read(
        "compliance", args={"event_id": "event", "name": "weather_name"}, ok=(302,)
    ),
    "GET audit:settings-version": Read(
        "compliance", args={"catalog": "slug", "version": "settings_version"}, ok=(302,)
    ),
    # sources
    "GET sources:source-list": Read("admin", args=SLUG),
    "POST sources:source-list": Write(
        "admin",
        {"name": "more", "url": "http://127.0.0.1:9/more", "timeout_seconds": "30"},
        "source_changed",
        args=SLUG,
    ),
    "GET sources:source-detail": Read("admin", args={"source_id": "source"}),
    "POST sources:source-detail": Write(
        "admin",
        {"url": "http://127.0.0.1:9/mcp", "timeout_seconds": "12"},
        "source_changed",
        args={"source_id": "source"},
    ),
    "POST sources:source-test": Write(
        "admin",
        {},
        why="a connection test: reads the upstream's tool list, changes nothing",
        args={"source_id": "source"},
    ),
    "POST sources:source-sync": Write(
        "admin",
        {},
        why="queues a sync job: its worker writes each tool's change",
        args={"source_id": "source"},
    ),
    "POST sources:source-delete": Write(
        "admin", {}, "source_changed", args={"source_id": "source"}
    ),
    # approvals
    "GET calls:approval-list": Read("approver", scoped=False, outsider="curator"),
    "POST calls:approval-decide": Write(
        "approver",
        {"reason": "fine"},
        "approval",
        args={"approval_id": "approval", "decision": "approve"},
    ),
    # learning
    "GET learning:labels": Read("curator", args=SLUG),
    "POST learning:label-upload": Write(
        "curator", labels_file, "labels_changed", args=SLUG
    ),
    "POST learning:label-delete": Write(
        "curator",
        lambda ids: {"id": str(ids["label"])},
        "labels_changed",
        args=SLUG,
    ),
    "GET learning:label-review": Read("curator", args=SLUG),
    "POST learning:label-review": Write(
        "curator",
        lambda ids: {"action": "reject", "ids": [str(ids["label"])]},
        "labels_changed",
        args=SLUG,
    ),
    "GET learning:evaluation": Read("curator", args=SLUG),
    "POST learning:evaluation": Write(
        "curator",
        {},
        why=EVALUATES,
        args=SLUG,
    ),
    "GET learning:evaluation-row": Read(
        "curator", args={**SLUG, "run_id": "run", "index": "zero"}
    ),
    # webhooks
    "GET notify:webhook-list": Read("admin", args=SLUG),
    "POST notify:webhook-list": Write(
        "admin",
        {
            "name": "pager",
            "url": "http://127.0.0.1:9/pager",
            "events": ["approval.requested"],
            "format": "quiver",
            "active": "on",
        },
        "webhook_changed",
        args=SLUG,
    ),
    "GET notify:webhook-detail": Read("admin", args={"webhook_id": "webhook"}),
    "POST notify:webhook-detail": Write(
        "admin",
        {
            "name": "ops",
            "url": "http://127.0.0.1:9/hook2",
            "events": ["approval.requested"],
            "format": "quiver",
        },
        "webhook_changed",
        args={"webhook_id": "webhook"},
    ),
    "POST notify:webhook-rotate": Write(
        "admin",
        {"grace_hours": "0"},
        "webhook_changed",
        args={"webhook_id": "webhook"},
    ),
    "POST notify:webhook-delete": Write(
        "admin", {}, "webhook_changed", args={"webhook_id": "webhook"}
    ),
    "POST notify:delivery-replay": Write(
        "admin",
        {},
        "webhook_changed",
        args={"webhook_id": "webhook", "delivery_id": "delivery"},
    ),
    # sign-in settings (an admin of some catalogs is the outsider of a mapping
    # giving another, and of the password switch)
    "GET sso:settings": Read("admin", scoped=False, outsider="curator"),
    "POST sso:settings": Write(
        "admin",
        {"value": "ops-team", "groups": ["curator"], "catalogs": "default"},
        SIGN_IN,
    ),
    "GET sso:mapping-edit": Read("admin", args=CONSOLE_MAPPING),
    "POST sso:mapping-edit": Write(
        "admin",
        {"groups": ["curator"], "catalogs": "default, elsewhere"},
        SIGN_IN,
        args=CONSOLE_MAPPING,
    ),
    "POST sso:mapping-delete": Write("admin", {}, SIGN_IN, args=CONSOLE_MAPPING),
    "POST sso:password-switch": Write("admin", {"on": "1"}, SIGN_IN),
    # people's own connections to sources that ask each person for OAuth
    "GET vault:connection-list": Read("member", hides="mynotes"),
    "POST vault:connect": Other(
        "starts the person's own connection: keeps the flow in their session and "
        "sends their browser to the source's authorization server, throttled per "
        "address; its answer (the callback) is what connects and is audited "
        "(tests/vault/test_connect.py, against a real authorization server)",
        anonymous=(302,),
        args=PERSONAL,
    ),
    "GET vault:callback": Other(
        "the authorization server's answer to a flow the person's own session "
        "started: connects (upstream_auth connected) or refuses (upstream_auth "
        "refused), throttled per address (tests/vault/test_connect.py)",
        anonymous=(302,),
        args=PERSONAL,
    ),
    "POST vault:disconnect": Write(
        "member",
        {},
        UPSTREAM_AUTH,
        anyone="a person disconnects only their own connection; anyone else's is "
        "a 404 (tests/vault/test_connect.py)",
        args={"connection_id": "vault_connection"},
    ),
    "POST vault:source-client": Write(
        "admin", {"client_id": "quiver-by-hand"}, UPSTREAM_AUTH, args=PERSONAL
    ),
}

SITE: dict[str, Contract] = {
    # OAuth: the metadata and keys are public; the consent page and the
    # machine endpoints are the protocol's (tests/oauth, tests/e2e/test_oauth_clients)
    "GET oauth:protected-resource": Read("member", scoped=False, public=True),
    "GET oauth:protected-resource-mcp": Read("member", scoped=False, public=True),
    # The test client's host (testserver) over plain http is no loopback: the
    # metadata names that misconfiguration rather than publish an http issuer.
    "GET oauth:authorization-server": Read(
        "member", scoped=False, public=True, ok=(503,)
    ),
    "GET oauth:jwks": Read("member", scoped=False, public=True),
    "GET oauth:authorize": Other(CONSENT, anonymous=(302,)),
    "POST oauth:authorize": Other(CONSENT, anonymous=(302,)),
    "POST oauth:token": Other(MACHINE, anonymous=(400,)),
    "POST oauth:register": Other(MACHINE, anonymous=(400,)),
    "POST oauth:revoke": Other(MACHINE, anonymous=(400,)),
    "GET oauth:connection-list": Read(
        "member", scoped=False, outsider="curator", hides=CONNECTED_APP
    ),
    "POST oauth:connection-revoke": Write(
        "member",
        {},
        "oauth_revoked",
        scoped=False,
        outsider="curator",
        args={"public_id": "connection"},
    ),
    "GET healthz": Read("member", scoped=False, public=True, ok=(200, 503)),
    "GET metrics": Other(
        "Prometheus' scrape: its own bearer token, or an admin",
        anonymous=(401, 403),
    ),
    "GET api-schema": Read("agent", scoped=False),
    "GET api-docs": Read("member", scoped=False, outsider=""),
    "GET login": Read("member", scoped=False, public=True),
    "GET vault:client-document": Read(
        "member", scoped=False, public=True, args=PERSONAL
    ),
    "GET sso:start": Other(
        "single sign-on's start, for people signed out: off here (no provider: "
        "404); on, it sends the browser to the provider, throttled per address "
        "(tests/sso/test_start_and_callback.py, against a real provider)",
        anonymous=(404,),
    ),
    "GET sso:callback": Other(
        "the provider's answer: signs a person in (sign_in) or refuses them "
        "(sign_in_refused) with the request's id; off here (404), tried against "
        "a real provider by tests/sso and tests/e2e/test_sso.py",
        anonymous=(404,),
    ),
    "POST login": Other("signing in (its own throttle per account and address)"),
    "PUT login": Other("signing in (its own throttle per account and address)"),
    "GET logout": Other("signing out"),
    "POST logout": Other("signing out"),
    "* admin:*": Other(
        "Django's admin site: staff only (its tool page saves through the "
        "audited services; every other page reads)",
        anonymous=(302,),
    ),
}

CONTRACTS: dict[str, Contract] = {**API, **CONSOLE, **SITE}
