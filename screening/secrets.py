"""Secrets in a result's text: cloud keys, tokens, private keys, JWTs.

Each rule is a pattern with bounded repetition; the AWS secret access key (40
characters of base64, like many hashes) counts only beside its name or within a
few lines after an access key id, so a plain hash is not taken for one.
"""

from __future__ import annotations

import re
from typing import Any

import re2

from screening.rules import Finding

_AWS_ID = (
    r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA|ASCA)[A-Z0-9]{16}\b"
)
_AWS_SECRET = r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"
_AWS_SECRET_NAMED = (
    r"(?i:aws.{0,20}secret|secret.?access.?key|aws_secret)[^\n]{0,20}?[:=\s\"']+"
    r"(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
)
PATTERNS = (
    ("aws-access-key-id", re.compile(_AWS_ID)),
    (
        "github-token",
        re.compile(
            r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}"
            r"|github_pat_[A-Za-z0-9_]{22,255})\b"
        ),
    ),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,200}")),
    ("stripe-key", re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,200}")),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    (
        "llm-api-key",
        re.compile(r"\bsk-(?:proj-|ant-(?:api\d\d-)?)?[A-Za-z0-9_-]{32,200}"),
    ),
    (
        "private-key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----[\s\S]{0,20000}?"
            r"(?:-----END (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----|$)"
        ),
    ),
    (
        "jwt",
        re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    ),
    (
        "authorization-header",
        re.compile(
            r"(?i:\bauthorization\b)[\"']?\s*[:=]\s*[\"']?(?i:bearer|basic|token)\s+"
            r"[A-Za-z0-9._~+/=-]{12,}"
        ),
    ),
)
_AWS_ID_RE = re.compile(_AWS_ID)
_AWS_SECRET_RE = re.compile(_AWS_SECRET)
_AWS_SECRET_NAMED_RE = re.compile(_AWS_SECRET_NAMED)
# Lines after an access key id in which a 40-character base64 run is its secret.
NEAR_KEY_ID = 400


def _hint() -> Any:
    """A cheap test first, one RE2 pass: a text with none of these cannot hold
    any secret above."""
    options = re2.Options()
    options.log_errors = False
    return re2.compile(
        r"AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA|ASCA|gh[pousr]_"
        r"|github_pat_|xox|_live_|_test_|AIza|sk-|PRIVATE KEY|eyJ"
        r"|(?i:authorization|secret)",
        options,
    )


_HINT = _hint()


def secrets_in(text: str, where: str) -> list[Finding]:
    """Every secret found in ``text`` (never excerpted)."""
    if not _HINT.search(text):
        return []
    found = [
        Finding(rule, where, match.start(), match.end())
        for rule, pattern in PATTERNS
        for match in pattern.finditer(text)
    ]
    found.extend(_aws_secrets(text, where))
    return found


def _aws_secrets(text: str, where: str) -> list[Finding]:
    spans: set[tuple[int, int]] = set()
    for match in _AWS_SECRET_NAMED_RE.finditer(text):
        spans.add(match.span("secret"))
    for key in _AWS_ID_RE.finditer(text):
        window = text[key.end() : key.end() + NEAR_KEY_ID]
        for match in _AWS_SECRET_RE.finditer(window):
            if _looks_random(match[0]):
                start = key.end() + match.start()
                spans.add((start, start + 40))
    return [
        Finding("aws-secret-access-key", where, start, end)
        for start, end in sorted(spans)
    ]


def _looks_random(token: str) -> bool:
    """Mixed case and a digit or symbol: not a word, not a hex digest."""
    return (
        any(c.islower() for c in token)
        and any(c.isupper() for c in token)
        and any(c.isdigit() or c in "/+" for c in token)
    )
