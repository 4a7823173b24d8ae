"""Personal data in a result's text: the built-in rules a catalog may turn on
and a catalog's own patterns (RE2: linear time, whatever a curator writes).

Numbers are checked, not only matched: a card number passes Luhn, an IBAN
mod 97, a social security number the SSA's reserved ranges.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import re2

from screening.rules import CUSTOM_PII_PREFIX, Finding

_EMAIL = re.compile(
    r"(?<![\w.+-])[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*"
    r"\.[A-Za-z]{2,24}\b"
)
_PHONE = re.compile(
    r"(?<![\w+])(?:\+[1-9]\d{0,2}[ .-]?(?:\(?\d{1,4}\)?[ .-]?){2,5}\d{2,4}"
    r"|\(\d{3}\)\s?\d{3}-\d{4}|\b\d{3}-\d{3}-\d{4})\b"
)
_CARD = re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b")
_SSN = re.compile(r"\b(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}\b")


def _luhn(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _card(text: str) -> bool:
    digits = re.sub(r"\D", "", text)
    return 13 <= len(digits) <= 19 and _luhn(digits)


def _iban(text: str) -> bool:
    compact = text.replace(" ", "")
    moved = compact[4:] + compact[:4]
    number = "".join(str(int(c, 36)) for c in moved)
    return 15 <= len(compact) <= 34 and int(number) % 97 == 1


def _phone(text: str) -> bool:
    return 8 <= sum(c.isdigit() for c in text) <= 15


BUILT_IN: dict[str, tuple[re.Pattern[str], Callable[[str], bool] | None]] = {
    "email": (_EMAIL, None),
    "phone": (_PHONE, _phone),
    "credit-card": (_CARD, _card),
    "iban": (_IBAN, _iban),
    "us-ssn": (_SSN, None),
}


@dataclass(frozen=True)
class Pattern:
    """A catalog's own rule: a name (its finding is ``pii:<name>``) and an RE2
    pattern."""

    name: str
    pattern: str


@lru_cache(maxsize=512)
def compiled(pattern: str) -> Any:
    """The pattern compiled by RE2 (raises ``re2.error`` when it is not one)."""
    options = re2.Options()
    options.log_errors = False
    return re2.compile(pattern, options)


def pii_in(
    text: str, where: str, built_in: Iterable[str], own: Iterable[Pattern]
) -> list[Finding]:
    """Every hit of the named built-in rules and of the catalog's patterns."""
    found = []
    for name in built_in:
        pattern, check = BUILT_IN[name]
        for match in pattern.finditer(text):
            if check is None or check(match[0]):
                found.append(Finding(name, where, match.start(), match.end()))
    for rule in own:
        for match in compiled(rule.pattern).finditer(text):
            if match.end() > match.start():
                rule_id = f"{CUSTOM_PII_PREFIX}{rule.name}"
                found.append(Finding(rule_id, where, match.start(), match.end()))
    return found
