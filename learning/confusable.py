"""Tool pairs the ranking confuses, with the requests that confuse them and which
fields to sharpen.

Two kinds of evidence: the latest finished evaluation's misses (each request whose
expected tool was not ranked first counts once for the pair), and near-duplicate
stored vectors (all pairs, so only up to ``MAX_PAIRWISE`` embedded tools). The
fields to sharpen follow a simple, stated rule.
The rule: docs/how-to/labels-and-evaluation.md, Confusable tools.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

import numpy as np

from catalog.models import Catalog, Tool, ToolEmbedding
from learning.models import Evaluation, EvaluationState

FIELDS = ("description", "examples", "avoid_when")
MAX_PAIRWISE = 5_000
MAX_REQUESTS = 5
MAX_PAIRS = 100
DEFAULT_THRESHOLD = 0.9


def confusable_pairs(
    catalog: Catalog,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    min_misses: int = 1,
    evaluation: Evaluation | None = None,
) -> dict[str, Any]:
    """The report: ``pairs`` (misses first, most first), the evaluation read."""
    run = evaluation or latest_finished(catalog)
    pairs: dict[tuple[str, str], dict[str, Any]] = {}
    for (a, b), requests in (_miss_pairs(run) if run else {}).items():
        if len(requests) >= min_misses:
            pairs[(a, b)] = {
                "misses": len(requests),
                "requests": requests[:MAX_REQUESTS],
            }
    for (a, b), cosine in _near_duplicates(catalog, threshold).items():
        pairs.setdefault((a, b), {"misses": 0, "requests": []})["cosine"] = cosine
    texts = _fields(catalog, {name for pair in pairs for name in pair})
    out = []
    for (a, b), found in pairs.items():
        out.append(
            {
                "tools": [a, b],
                "misses": found["misses"],
                "cosine": found.get("cosine"),
                "requests": found["requests"],
                "sharpen": sharpen(texts.get(a), texts.get(b), a, b),
            }
        )
    out.sort(key=lambda p: (-p["misses"], -(p["cosine"] or 0.0), p["tools"]))
    return {
        "evaluation": run.pk if run else None,
        "threshold": threshold,
        "pairs": out[:MAX_PAIRS],
    }


def latest_finished(catalog: Catalog) -> Evaluation | None:
    return (
        Evaluation.objects.filter(catalog=catalog, state=EvaluationState.SUCCEEDED)
        .order_by("-id")
        .first()
    )


def _miss_pairs(run: Evaluation) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """(tool, tool) -> the requests where one was expected and the other won."""
    found: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in run.rows:
        top = row.get("top") or []
        if not top:
            continue
        winner = top[0]
        expected = {e["tool"] for e in row.get("expected", [])}
        if winner in expected:
            continue
        for tool in sorted(expected):
            pair = (min(tool, winner), max(tool, winner))
            found[pair].append(
                {"index": row["index"], "text": row["text"], "expected": tool,
                 "ranked_first": winner}
            )  # fmt: skip
    return found


def _near_duplicates(
    catalog: Catalog, threshold: float
) -> dict[tuple[str, str], float]:
    model = catalog.active_embedding_model
    if not model:
        return {}
    rows = list(
        ToolEmbedding.objects.filter(
            catalog=catalog, model_id=model, tool__status="active"
        ).values_list("tool__name", "embedding")[: MAX_PAIRWISE + 1]
    )
    if len(rows) < 2 or len(rows) > MAX_PAIRWISE:
        return {}
    names = [name for name, _ in rows]
    matrix = np.stack([np.asarray(v, dtype=np.float32) for _, v in rows])
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    cosines = matrix @ matrix.T
    i, j = np.nonzero(np.triu(cosines >= threshold, k=1))
    out = {}
    for a, b in zip(i.tolist(), j.tolist(), strict=True):
        pair = (min(names[a], names[b]), max(names[a], names[b]))
        out[pair] = round(float(cosines[a, b]), 4)
    return out


def _fields(catalog: Catalog, names: set[str]) -> dict[str, dict[str, str]]:
    rows = Tool.objects.filter(catalog=catalog, name__in=names).values_list(
        "name", *FIELDS
    )
    return {
        name: {
            "description": description or "",
            "examples": " ".join(str(e) for e in examples or []),
            "avoid_when": avoid_when or "",
        }
        for name, description, examples, avoid_when in rows
    }


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def overlap(a: str, b: str) -> float:
    """Jaccard of two texts' lower-case word sets (0 when both are empty)."""
    left, right = _words(a), _words(b)
    union = left | right
    return len(left & right) / len(union) if union else 0.0


def sharpen(
    first: dict[str, str] | None, second: dict[str, str] | None, a: str, b: str
) -> dict[str, list[str]]:
    """Tool name -> the fields to sharpen (the module's rule)."""
    if first is None or second is None:
        return {}
    out = {}
    for name, own, other in ((a, first, second), (b, second, first)):
        empty = [f for f in FIELDS if not own[f].strip()]
        if empty:
            out[name] = empty
            continue
        closest = max(FIELDS, key=lambda f: overlap(own[f], other[f]))
        out[name] = [closest]
    return out
