"""What a chain check tells the person or key who asked for it.

The check always walks the whole chain: a record removed from one catalog breaks
the link of the next record, whatever catalog that one is in. A reader of every
catalog gets the whole answer. A reader limited to some catalogs gets only what
their own records let them know: whether the chain is intact, how many of their
records were checked, the last of them, and where the damage is when it is in
one of them. Nothing counts or names another catalog's records: no chain
length, no place in the chain (``seq``), no checkpoint, no timing (the time a
check takes grows with the whole chain) and no sink state; damage elsewhere is
``kind: elsewhere`` with no id. The answer has the same fields either way
(``scope`` lists the catalogs it counts, null for all of them).
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Any

from audit.models import AuditEvent
from audit.querysets import Reader
from audit.verify import ChainCheck, Damage

ELSEWHERE = "elsewhere"
# The damage in a reader's own record, in words that count nothing.
PROBLEMS = {
    Damage.CONTENT_EDITED: "this record's content does not match its hash",
    Damage.LINK_BROKEN: "this record does not link to the one before it: records "
    "were removed or reordered before it",
    Damage.HEAD_MISSING: "records are missing before this one",
    Damage.TAIL_MISSING: "records are missing after this one",
    Damage.TRUNCATED: "records are missing",
    Damage.CHECKPOINT_MISMATCH: "this record differs from what a signed checkpoint "
    "saw: the chain was rebuilt or re-hashed",
    Damage.BAD_KEY: "this record was sealed with a key it may not have",
    Damage.UNKNOWN_KEY: "this record was sealed with a key the keyring does not hold",
    Damage.UNSEALED: "this record was left unsealed too long",
}
PROBLEM_ELSEWHERE = (
    "the chain is damaged outside the records you may read; an auditor who reads "
    "every catalog sees where"
)
WITHHELD = (
    "first_bad_seq",
    "head_seq",
    "checkpoint_seq",
    "checkpoint_time",
    "seconds",
    "per_second",
)


def check_for(
    check: ChainCheck, access: Reader, since: int | datetime | None = None
) -> dict[str, Any]:
    """The check as ``access`` may read it (``since``: where the check began)."""
    answer = asdict(check)
    if access.catalogs is None:
        return {**answer, "scope": None}
    mine = AuditEvent.objects.visible_to(access).filter(seq__isnull=False)
    bad = None
    if check.first_bad_id is not None:
        bad = mine.filter(pk=check.first_bad_id).first()
    answer |= dict.fromkeys(WITHHELD)
    answer |= {
        "checked": _checked(mine, check, since),
        "head_id": _last(mine.filter(seq__lte=check.head_seq)),
        "first_bad_id": bad.pk if bad is not None else None,
        "kind": _kind(check, bad),
        "problem": _problem(check, bad),
        "sinks": {},
        "scope": list(access.catalogs),
    }
    return answer


def _checked(mine: Any, check: ChainCheck, since: int | datetime | None) -> int:
    """The reader's records in the stretch of the chain the check got through."""
    if not check.checked:
        return 0
    end = check.head_seq if check.first_bad_seq is None else check.first_bad_seq - 1
    rows = mine.filter(seq__lte=end)
    if isinstance(since, int):
        rows = rows.filter(pk__gte=since)
    elif since is not None:
        rows = rows.filter(created__gte=since)
    return int(rows.count())


def _last(rows: Any) -> int | None:
    found = rows.order_by("-seq").values_list("pk", flat=True).first()
    return int(found) if found is not None else None


def _kind(check: ChainCheck, bad: AuditEvent | None) -> str:
    if check.ok:
        return ""
    return check.kind if bad is not None else ELSEWHERE


def _problem(check: ChainCheck, bad: AuditEvent | None) -> str:
    if check.ok:
        return ""
    if bad is None:
        return PROBLEM_ELSEWHERE
    return PROBLEMS.get(check.kind, "this record is damaged")


def last_check_for(
    last: dict[str, Any] | None, access: Reader
) -> dict[str, Any] | None:
    """The last check kept (``compliance.last_verify``) as ``access`` may read it: to a
    limited reader, when it ran and whether the chain was intact, nothing else
    (it was counted for whoever ran it)."""
    if last is None or access.catalogs is None:
        return last
    return {"ran_at": last["ran_at"], "outcome": last.get("outcome")}
