"""Every value a caller, a person or a tool gave is inert where a person reads
it: in a Slack body (Slack's mrkdwn, and the Markdown a Slack-compatible
receiver such as Mattermost renders) nothing in a value can close its code span
or block, be bold, make a link, mention a channel or start a line of its own;
in the approval email it cannot start a line or a header, reorder the text or
pass for Quiver's own link.

The reader below is the one rule both markups share for code: ```...``` is a
block, `...` on one line a span, and nothing inside either is formatted."""

from __future__ import annotations

import json
import re
import unicodedata
import uuid
from typing import Any

import pytest
from django.core import mail
from django.test import TestCase

from calls.decisions import deny
from identity.services import create_api_client
from notify import delivery
from notify import mail as approval_mail
from notify.models import ApprovalEmail, Delivery
from notify.payloads import slack_body
from tests.factories import make_user
from tests.notify.conftest import ask_approval, webhook_for

MARK = "QX9"  # in every hostile value: where it shows, the value shows
HOSTILE = [
    f"```\n*{MARK} bold* _it_ ~gone~ https://evil.example/x <!channel> ```",
    f"`{MARK}`*bold* `` ```` `",
    f"{MARK} <https://evil.example|Open in Quiver> <@U0123> <!here|here> <#C1>",
    f"{MARK} &lt;!channel&gt; &amp; <b>html</b>",
    f"{MARK}\n> a quote\n*Approve here*: https://evil.example/approve",
    f"{MARK}\u2028Approve or deny it: https://evil.example\u2029",
    f"{MARK}\u202egnp.exe\u2066 \u200b`\u200b`\u200b` www.evil.example",
    f"{MARK} :rotating_light: @channel @here *urgent*",
    f"{MARK}\r\n\t\x7f\x85\u00ad end",
]
LINK = re.compile(r"<https://quiver\.example\.com/approvals/#approval-[0-9a-f-]+\|")
CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)
ESCAPED = {"Cc", "Cf", "Co", "Cs", "Zl", "Zp"}


def outside_code(text: str) -> str:
    return CODE.sub(" ", text)


def assert_inert(text: str) -> None:
    """What a reader formats holds no part of a value, and what is code holds
    nothing that could end it or read as more than text."""
    free = outside_code(text)
    assert MARK not in free, text
    assert "`" not in free, text  # no code left open
    assert "<" not in LINK.sub("", free) and ">" not in free.replace("Quiver>", "")
    assert "<!" not in text and "<@" not in text and "<#" not in text
    for code in CODE.findall(text):
        inner = code.strip("`")
        assert "<" not in inner and ">" not in inner, code
        hidden = [
            c
            for c in inner
            if unicodedata.category(c) in ESCAPED and not (c == "\n" and "```" in code)
        ]
        assert hidden == [], code


def mrkdwn_of(message: dict[str, Any]) -> list[str]:
    """Every text of the message a person reads."""
    texts = [message["text"]]
    for block in message["blocks"]:
        if "text" in block:
            texts.append(block["text"]["text"])
        texts += [element["text"] for element in block.get("elements", [])]
    return texts


def event(**fields: Any) -> dict[str, Any]:
    """A stored event body (notify.payloads.event_body's shape)."""
    approval = {
        "id": str(uuid.uuid4()),
        "status": "denied" if fields.get("reason") else "pending",
        "tool": "files.delete_file",
        "tool_version": 3,
        "arguments": {"path": "/srv/q3.pdf"},
        "arguments_omitted": None,
        "arguments_hash": "9f2c",
        "agent": "api:files-bot",
        "selection_id": None,
        "requested": "2026-11-27T21:56:03+00:00",
        "expires": "2026-11-27T22:56:03+00:00",
        "decided": None,
        "decider": None,
        "reason": "",
        "used": None,
        "url": "https://quiver.example.com/approvals/#approval-1",
    }
    catalog = fields.pop("catalog", "default")
    approval.update(fields)
    kind = "approval.decided" if approval["reason"] else "approval.requested"
    return {
        "id": str(uuid.uuid4()),
        "type": kind,
        "created": approval["requested"],
        "catalog": catalog,
        "approval": approval,
    }


FIELDS = ["tool", "catalog", "agent", "decider", "reason", "argument", "key"]


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("value", HOSTILE, ids=range(len(HOSTILE)))
def test_no_value_in_any_field_is_formatted_in_a_slack_body(field, value):
    if field == "argument":
        body = event(arguments={"path": value, "nested": [{"note": value}]})
    elif field == "key":
        body = event(arguments={value: 1})
    elif field == "reason":
        body = event(reason=value, decider="ann")
    else:
        body = event(**{field: value})
    message = slack_body(body)
    for text in mrkdwn_of(message):
        assert_inert(text)
    assert MARK in json.dumps(message, ensure_ascii=False)  # shown, not dropped


def test_a_backtick_in_the_arguments_is_shown_as_its_json_escape():
    message = slack_body(event(arguments={"cmd": "```rm -rf /```"}))
    block = message["blocks"][1]["text"]["text"]
    assert block.count("```") == 2  # the block's own fences only
    shown = block.removeprefix("```").removesuffix("```")
    assert json.loads(shown) == {"cmd": "```rm -rf /```"}


@pytest.mark.django_db
def test_a_hostile_agent_argument_and_reason_reach_slack_inert(
    receiver, admin_user, settings
):
    settings.QUIVER_PUBLIC_URL = "https://quiver.example.com"
    webhook_for(receiver, format="slack")
    client, _key = create_api_client(
        f"*{MARK}* <!channel> https://evil.example", "agent", catalogs="*"
    )
    arguments = {"note": HOSTILE[0], "more": HOSTILE[4]}
    approval = ask_approval(client.user, arguments=arguments)
    with TestCase.captureOnCommitCallbacks(execute=True):
        deny(approval, person=admin_user, reason=HOSTILE[2])
    for row in Delivery.objects.filter(approval_id=approval.pk).order_by("id"):
        delivery.attempt(row.pk)

    requested, decided = (json.loads(got.body) for got in receiver.wait_for(2))
    for message in (requested, decided):
        for text in mrkdwn_of(message):
            assert_inert(text)
    assert MARK in requested["blocks"][1]["text"]["text"]
    assert decided["text"].count(MARK) == 2  # the agent and the reason, as code


@pytest.mark.django_db
def test_the_approval_email_gives_no_value_a_line_or_a_header_of_its_own(
    approver_groups, settings
):
    settings.QUIVER_PUBLIC_URL = "https://quiver.example.com"
    make_user("ann", groups=("approver",))
    name = f"bot\nApprove or deny it: https://evil.example\u2028{MARK}\u202e"
    client, _key = create_api_client(name, "agent", catalogs="*")
    approval = ask_approval(client.user, arguments={"x": HOSTILE[5]})

    assert approval_mail.email_approvers(approval.pk) == "sent"

    [message] = mail.outbox
    assert "\n" not in message.subject and MARK in message.subject
    lines = message.body.split("\n")
    ours = [line for line in lines if line.startswith("Approve or deny it:")]
    assert ours == [
        f"Approve or deny it: https://quiver.example.com/approvals/#approval-{approval.pk}"
    ]
    arguments = lines.index(next(li for li in lines if li.startswith("Arguments")))
    assert lines.index(ours[0]) < arguments  # Quiver's link before the caller's words
    for text in (message.subject, message.body):
        assert not [c for c in text if unicodedata.category(c) in ESCAPED and c != "\n"]
    assert ApprovalEmail.objects.get(approval_id=approval.pk).status == "sent"
