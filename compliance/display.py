"""How the console says what an audit event records: one line per row, and the
grouped accounts a selection's page shows. Plain functions over the stored JSON, so
rows written by older code (missing keys) still read."""

from __future__ import annotations

from typing import Any

from audit.acting import ACTING_FOR
from audit.choices import EventType
from audit.models import AuditEvent

QUERY_CHARS = 60


def who(event: AuditEvent) -> str:
    """API clients' service users are ``api:<name>``: say "agent <name>", and
    for whom it acted ("for alice via Claude Code") when it acted for a person."""
    name = event.actor_name
    said = f"agent {name[4:]}" if name.startswith("api:") else name
    acting = (event.input or {}).get(ACTING_FOR)
    if not isinstance(acting, dict) or not acting.get("person"):
        return said
    client = acting.get("oauth_client")
    via = f" via {client.get('name')}" if isinstance(client, dict) else ""
    return f"{said} for {acting['person']}{via}"


def query_text(event: AuditEvent) -> str:
    """The query asked, or the latest user turn of a conversation."""
    request = (event.input or {}).get("request") or {}
    messages = request.get("messages") or []
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    if users:
        return _text(users[-1].get("content"))
    return _text(request.get("query"))


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else "(structured input)"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def describe(event: AuditEvent) -> str:
    """One line saying what happened."""
    if event.event_type == EventType.SELECTION:
        return f"{who(event)}: {_selection_line(event)}"
    if event.event_type == EventType.VALIDATION:
        return f"{who(event)}: {_validation_line(event)}"
    if event.event_type == EventType.TOOL_CALL:
        return f"{who(event)}: {call_line(event)}"
    if event.event_type == EventType.APPROVAL:
        return f"{who(event)}: {_approval_line(event)}"
    return f"{who(event)}: {event.summary}"


REASON_CHARS = 120
CALL_WORDS = {
    "ran": "ran",
    "refused": "refused",
    "pending": "waits for a person's approval",
    "denied": "denied by a person",
    "failed": "failed upstream",
    "timed_out": "timed out",
    "started": "started",
    "interrupted": "was interrupted, no outcome recorded",
}
TIMED = frozenset({"ran", "failed", "timed_out"})


def _short(text: Any) -> str:
    text = str(text)
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 1] + "…"


def call_line(event: AuditEvent) -> str:
    """A ``tool_call``: the tool, its version and source, the outcome, why (when it
    did not run) and how long it took; an outcome names the call it ends (the
    id of its ``started`` event)."""
    call, output = event.input or {}, event.output or {}
    outcome = str(output.get("outcome") or "?")
    line = f"call to {call.get('tool') or '?'}"
    if call.get("tool_version"):
        line += f" v{call['tool_version']}"
    if call.get("source"):
        line += f" via {call['source']}"
    line += f" {CALL_WORDS.get(outcome, outcome)}"
    if output.get("reason") and outcome != "ran":
        line += f": {_short(output['reason'])}"
    duration = output.get("duration_ms")
    if outcome in TIMED and isinstance(duration, int | float):
        line += f" ({duration:.0f} ms)"
    if call.get("call_id"):
        line += f" [call {call['call_id']}]"
    return line


APPROVAL_WORDS = {
    "requested": "asked a person to approve",
    "approved": "approved",
    "denied": "denied",
    "expired": "let expire, undecided:",
    "used": "used the approval of",
}


def _approval_line(event: AuditEvent) -> str:
    """An ``approval``: requested, approved, denied, expired or used, with the
    tool, whose request it was and the reason given."""
    asked, output = event.input or {}, event.output or {}
    status = str(output.get("status") or "?")
    line = f"{APPROVAL_WORDS.get(status, status)} {asked.get('tool') or '?'}"
    requester = asked.get("requester")
    if requester and status in {"approved", "denied", "expired"}:
        name = f"agent {requester[4:]}" if requester.startswith("api:") else requester
        line += f" (requested by {name})"
    if output.get("reason") and status in {"approved", "denied"}:
        line += f": {_short(output['reason'])}"
    return line


def _selection_line(event: AuditEvent) -> str:
    output = event.output or {}
    stats = output.get("stats") or {}
    query = query_text(event)
    if len(query) > QUERY_CHARS:
        query = query[: QUERY_CHARS - 1] + "…"
    tools = output.get("tools") or []
    line = f"{_plural(len(tools), 'tool') if tools else 'no tool'} for ‘{query}’"
    policy, hidden = stats.get("excluded_by_policy") or 0, stats.get("hidden") or 0
    if policy:
        line += f", {policy} excluded by policy"
        if hidden:
            line += f" ({hidden} of them hidden from this caller)"
    if output.get("degraded"):
        line += ", degraded"
    return line


def _validation_line(event: AuditEvent) -> str:
    output = event.output or {}
    calls = output.get("calls")
    if calls is None:  # the single-tool /validate endpoint
        verdict = "valid" if output.get("valid") else "invalid"
        return f"arguments for {output.get('tool', '?')} {verdict}"
    bad = [c for c in calls if not c.get("valid")]
    line = f"{_plural(len(calls), 'tool call')}, {len(bad)} invalid"
    if bad:
        named = ", ".join(
            f"{c.get('tool')} ({', '.join(c.get('flags') or []) or 'arguments'})"
            for c in bad[:3]
        )
        line += f": {named}"
    return line


def exclusion_account(output: dict[str, Any]) -> list[dict[str, Any]]:
    """Exclusions grouped by stage, then by rule, with counts and the names."""
    groups: dict[str, dict[str, list[str]]] = {}
    for item in output.get("excluded") or []:
        by_rule = groups.setdefault(str(item.get("stage", "")), {})
        by_rule.setdefault(str(item.get("reason", "")), []).append(
            str(item.get("name", ""))
        )
    account = []
    for stage, rules in groups.items():
        ordered = sorted(rules.items(), key=lambda item: (-len(item[1]), item[0]))
        account.append(
            {
                "stage": stage,
                "count": sum(len(names) for names in rules.values()),
                "rules": [
                    {"reason": reason, "count": len(names), "names": names}
                    for reason, names in ordered
                ],
            }
        )
    return account


def signal_bars(tool: dict[str, Any]) -> list[dict[str, Any]]:
    """Each signal of a pick with a bar width in percent (signals are 0..1)."""
    bars = []
    for name, value in sorted((tool.get("signals") or {}).items()):
        width = max(0.0, min(1.0, float(value))) * 100
        bars.append({"name": name, "value": value, "width": round(width, 1)})
    return bars
