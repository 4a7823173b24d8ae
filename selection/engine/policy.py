"""Policy: which tools a request may see at all, decided before ranking.

Rules run in a fixed order and a tool is reported under the first rule it fails,
so every exclusion has exactly one reason code. The checks are vectorised over the
snapshot's policy arrays (a few numpy operations even at 100,000 tools); sentences
are only written for the exclusions that are reported.

The token budget is the one rule that needs the ranking (it is greedy over the
ranked list), so ``apply_token_budget`` runs after ranking but reports under the
"policy" stage like the others.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Sequence

import numpy as np

from selection.engine.snapshot import CatalogSnapshot
from selection.engine.types import (
    HIDDEN,
    POLICY_REASONS,
    Exclusion,
    SelectionRequest,
)

CODE = {reason: i + 1 for i, reason in enumerate(POLICY_REASONS)}


def _rows_mask(n: int, rows: Sequence[np.ndarray]) -> np.ndarray:
    """A boolean mask with the given rows set."""
    mask = np.zeros(n, dtype=bool)
    for r in rows:
        mask[r] = True
    return mask


def _name_mask(snapshot: CatalogSnapshot, names: Sequence[str]) -> np.ndarray:
    """Mask of the named tools."""
    mask = np.zeros(len(snapshot.tools), dtype=bool)
    mask[snapshot.rows(list(names))] = True
    return mask


def _failing(
    snapshot: CatalogSnapshot, req: SelectionRequest
) -> list[tuple[str, np.ndarray]]:
    """(reason, mask of tools failing it) for every rule that applies."""
    a, n = snapshot.arrays, len(snapshot.tools)
    rules: list[tuple[str, np.ndarray]] = []
    hidden = _hidden_mask(snapshot, req)
    if hidden is not None:
        rules.append((HIDDEN, hidden))
    rules.append(("status", ~a.active))
    if req.block_tools:
        rules.append(("blocked", _name_mask(snapshot, req.block_tools)))
    if req.allow_tools is not None:
        rules.append(("not_allowed", ~_name_mask(snapshot, req.allow_tools)))
    if not req.allow_unsafe:
        rules.append(("unsafe", ~a.safe))
    if req.roles is not None:
        rows = [a.role_rows[r] for r in req.roles if r in a.role_rows]
        rules.append(("role", ~(a.open_roles | _rows_mask(n, rows))))
    rules.append(("no_schema_mode", ~a.schema_ok))
    for cap in req.require_capabilities or ():
        rows = [a.capability_rows[cap]] if cap in a.capability_rows else []
        rules.append(("capability", ~_rows_mask(n, rows)))
    if req.max_cost_per_call is not None:
        rules.append(("budget_cost", a.cost > req.max_cost_per_call + 1e-12))
    if req.categories is not None:
        wanted = {c.lower() for c in req.categories}
        rows = [a.category_rows[c] for c in wanted if c in a.category_rows]
        rules.append(("category", ~_rows_mask(n, rows)))
    return rules


def _hidden_mask(snapshot: CatalogSnapshot, req: SelectionRequest) -> np.ndarray | None:
    """Tools outside what the caller may ever be offered (None: nothing hidden)."""
    a, n = snapshot.arrays, len(snapshot.tools)
    masks = []
    if not req.visible_held:
        masks.append(a.held)
    if not req.visible_unsafe:
        masks.append(~a.safe)
    if req.visible_roles is not None:
        rows = [a.role_rows[r] for r in req.visible_roles if r in a.role_rows]
        masks.append(~(a.open_roles | _rows_mask(n, rows)))
    if not masks:
        return None
    return np.logical_or.reduce(masks)


def hidden_count(codes: np.ndarray) -> int:
    """How many tools the caller may never see (counted, never named)."""
    return int(np.count_nonzero(codes == CODE[HIDDEN]))


def policy_codes(snapshot: CatalogSnapshot, request: SelectionRequest) -> np.ndarray:
    """Per tool: 0 when the request may see it, else the code of the first failure."""
    codes = np.zeros(len(snapshot.tools), dtype=np.int8)
    for reason, failing in _failing(snapshot, request):
        codes[(codes == 0) & failing] = CODE[reason]
    return codes


# A snapshot is immutable, so the codes of one request against it never change:
# the call path asks them for each caller's widest request (every call), kept
# here while the snapshot lives (a new catalog version is a new snapshot).
_kept: weakref.WeakKeyDictionary[
    CatalogSnapshot, dict[SelectionRequest, np.ndarray]
] = weakref.WeakKeyDictionary()
_kept_lock = threading.Lock()
KEPT_PER_SNAPSHOT = 256


def kept_policy_codes(
    snapshot: CatalogSnapshot, request: SelectionRequest
) -> np.ndarray:
    """``policy_codes``, computed once per snapshot and (hashable) request: a
    call's check was a dozen array operations over the whole catalog (about a
    millisecond at 100,000 tools). The array is read-only."""
    with _kept_lock:
        found = _kept.setdefault(snapshot, {}).get(request)
    if found is not None:
        return found
    codes = policy_codes(snapshot, request)
    codes.setflags(write=False)
    with _kept_lock:
        kept = _kept.setdefault(snapshot, {})
        if len(kept) >= KEPT_PER_SNAPSHOT:
            kept.clear()
        kept[request] = codes
    return codes


def _detail(
    snapshot: CatalogSnapshot, req: SelectionRequest, row: int, reason: str
) -> str:
    """The sentence a person reads for one policy exclusion."""
    tool = snapshot.tools[row]
    writers: dict[str, Callable[[], str]] = {
        "status": lambda: f"The tool is {tool.status}.",
        "blocked": lambda: "The request's block list names this tool.",
        "not_allowed": lambda: "The request's allow list does not name this tool.",
        "unsafe": lambda: (
            "The tool is marked unsafe and the request did not allow unsafe tools."
        ),
        "role": lambda: (
            f"Only roles {', '.join(tool.allowed_roles)} may use it; "
            f"the caller has {', '.join(req.roles or ()) or 'no role'}."
        ),
        "no_schema_mode": lambda: _no_schema_detail(snapshot, row),
        "capability": lambda: (
            "It lacks the required capabilities "
            + ", ".join(
                c for c in req.require_capabilities or () if c not in tool.capabilities
            )
            + "."
        ),
        "budget_cost": lambda: (
            f"It costs {tool.cost_per_call:g} per call, above the "
            f"limit of {req.max_cost_per_call:g}."
        ),
        "category": lambda: (
            f"Its category '{tool.category}' is not one of "
            f"{', '.join(req.categories or ())}."
        ),
    }
    return writers[reason]()


def _no_schema_detail(snapshot: CatalogSnapshot, row: int) -> str:
    """Why a tool without a parameter schema is hidden (fail-closed, seed 001)."""
    tool = snapshot.tools[row]
    if not tool.allow_no_schema:
        return "It has no parameter schema and is not allowed without one."
    allowed = ", ".join(snapshot.settings.no_schema_modes_allowed) or "none"
    mode = tool.no_schema_mode or "unset"
    return (
        f"It has no parameter schema and its mode '{mode}' is not allowed ({allowed})."
    )


def policy_exclusions(
    snapshot: CatalogSnapshot,
    request: SelectionRequest,
    codes: np.ndarray,
    scores: np.ndarray,
    limit: int,
) -> list[Exclusion]:
    """Up to ``limit`` policy exclusions, the most relevant (by score) first.

    Hidden tools are never named: hiding them is access control, not a filter."""
    rows = np.flatnonzero((codes != 0) & (codes != CODE[HIDDEN]))
    if not len(rows):
        return []
    order = np.lexsort((snapshot.order[rows], -scores[rows]))[:limit]
    out = []
    for row in rows[order]:
        reason = POLICY_REASONS[int(codes[row]) - 1]
        score = float(scores[row])
        out.append(
            Exclusion(
                name=snapshot.tools[row].name,
                stage="policy",
                reason=reason,
                detail=_detail(snapshot, request, int(row), reason),
                score=round(score, 4) if score > 0 else None,
            )
        )
    return out


def apply_token_budget(
    snapshot: CatalogSnapshot,
    rows: Sequence[int],
    budget: int | None,
    want: int | None = None,
) -> tuple[list[int], list[Exclusion]]:
    """Greedy over the ranked rows: skip any tool that would exceed the budget.

    Stops once ``want`` rows are kept, so a long ranking is never walked in full.
    """
    if budget is None:
        return list(rows[:want] if want is not None else rows), []
    kept: list[int] = []
    dropped: list[Exclusion] = []
    total = 0
    for row in rows:
        if want is not None and len(kept) >= want:
            break
        tokens = snapshot.tools[row].prompt_tokens
        if total + tokens > budget:
            detail = (
                f"Its {tokens} prompt tokens would bring the total to "
                f"{total + tokens}, above the budget of {budget}."
            )
            name = snapshot.tools[row].name
            dropped.append(Exclusion(name, "policy", "budget_tokens", detail))
            continue
        total += tokens
        kept.append(row)
    return kept, dropped
