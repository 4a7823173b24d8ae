"""The email that tells an approval's approvers it waits: one per approval.

Its ``ApprovalEmail`` row is made when the approval is requested (``notify.
services.approval_event``) and claimed here before anything is sent (``pending``
-> ``sending``, a conditional update): a task run twice, or run by two workers,
sends one message. Sent with Django's email backend (``EMAIL_BACKEND``; the
console by default) to the people who may decide it
(``identity.access_approvers``): never the requester, nor the maker of the key
that asked. A failed send is tried again (``MAX_ATTEMPTS``); a worker that dies
mid-send leaves the row ``sending`` and nothing is sent again (at most once).
"""

from __future__ import annotations

import json
import logging
import uuid

from django.conf import settings
from django.core.mail import EmailMessage
from django.db.models import F
from django.utils import timezone

from calls.models import Approval, ApprovalStatus
from identity.access_approvers import approvers_to_tell
from notify.choices import EmailStatus
from notify.models import ApprovalEmail
from notify.payloads import approval_link, literal

log = logging.getLogger(__name__)
MAX_ATTEMPTS = 5
ARGUMENT_CHARS = 4000


def email_approvers(approval_id: uuid.UUID | str) -> str:
    """Send the approval's one email if it is still waiting; the row's status
    after (``sent``, ``nobody``, ``failed``, or what another run left)."""
    claimed = ApprovalEmail.objects.filter(
        approval_id=approval_id, status=EmailStatus.PENDING
    ).update(status=EmailStatus.SENDING, attempts=F("attempts") + 1)
    row = ApprovalEmail.objects.filter(approval_id=approval_id).first()
    if row is None or not claimed:
        return row.status if row is not None else "gone"
    approval = Approval.objects.select_related("catalog").filter(pk=approval_id).first()
    if approval is None or approval.status != ApprovalStatus.PENDING:
        return _close(row, EmailStatus.NOBODY, "the approval no longer waits")
    people = approvers_to_tell(approval)
    if not people:
        return _close(row, EmailStatus.NOBODY, "no approver with an email address")
    try:
        _message(approval, [p.email for p in people]).send()
    except Exception as exc:  # any backend's failure (SMTP, socket, TLS...)
        log.warning("approval email %s not sent: %s", approval_id, type(exc).__name__)
        status = (
            EmailStatus.FAILED if row.attempts >= MAX_ATTEMPTS else EmailStatus.PENDING
        )
        return _close(row, status, f"{type(exc).__name__}: not sent")
    row.recipients = len(people)
    return _close(row, EmailStatus.SENT, "", sent=True)


def _close(row: ApprovalEmail, status: str, error: str, *, sent: bool = False) -> str:
    row.status, row.last_error = status, error[:500]
    row.sent = timezone.now() if sent else None
    row.save(update_fields=["status", "last_error", "sent", "recipients"])
    return status


def _message(approval: Approval, to: list[str]) -> EmailMessage:
    """Plain text, every value quoted with its controls and format marks escaped
    (``notify.payloads.literal``): a name or an argument cannot start a line of
    its own (nor a header), reorder the text or pass for Quiver's words, and
    Quiver's one link comes before the caller's arguments."""
    tool, slug = quoted(approval.tool_name), quoted(approval.catalog.slug)
    subject = (
        f"Approval needed: {tool} in {slug}, asked by {quoted(approval.requester_name)}"
    )
    link = approval_link(approval.pk)
    lines = [
        "A tool call waits for a person's approval; it has not run.",
        "",
        f"Tool: {tool} (version {approval.tool_version})",
        f"Catalog: {slug}",
        f"Asked by: {quoted(approval.requester_name)}",
        f"Expires: {approval.expires.isoformat(timespec='seconds')}",
        f"Approval: {approval.pk}",
        "",
        f"Approve or deny it: {link}"
        if link
        else "Approve or deny it on Quiver's "
        "Approvals page (QUIVER_PUBLIC_URL is not set, so no link).",
        "",
        *_arguments(approval),
        "",
        "You get this because you may approve calls in this catalog.",
    ]
    return EmailMessage(
        subject=settings.EMAIL_SUBJECT_PREFIX + subject[:180],
        body="\n".join(lines),
        to=to,
    )


def quoted(value: str) -> str:
    """A value as a JSON string: quoted, one line, nothing in it obeyed."""
    return literal(json.dumps(value, ensure_ascii=False))


def _arguments(approval: Approval) -> list[str]:
    if settings.QUIVER_CALL_ARGUMENTS_HASH_ONLY:
        return [f"Arguments: sha256 {approval.arguments_hash} (only the hash is kept)"]
    text = json.dumps(approval.arguments, indent=2, sort_keys=True, ensure_ascii=False)
    if len(text) > ARGUMENT_CHARS:
        text = text[:ARGUMENT_CHARS] + "\n… (cut; the page shows them all)"
    heading = "Arguments, as the caller sent them (not Quiver's words or links):"
    return [heading, literal(text, newlines=True)]
