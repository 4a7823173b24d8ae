"""Seed 003's LLM selection: a model picks tool names from a lexical shortlist.

The engine never talks to a model itself: the caller passes ``llm``, a function
from prompt to the model's text, and caches answers by prompt hash (the prompt is
deterministic for a given snapshot and request, see ``build_prompt``). Answers are
parsed forgivingly (code fences, prose around the array, truncated JSON, names
sanitised for OpenAI) and mapped to scores by rank. When there is no model, it
fails, or its answer names no known tool, the keyword scorer answers instead and
``fallback_reason`` says why.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

import numpy as np

from selection.engine.scorers.base import LLM, ScoreContext, Scored
from selection.engine.scorers.hybrid import hybrid
from selection.engine.scorers.simple import bm25f, keyword
from selection.engine.types import ToolRecord

DESCRIPTION_CHARS = 120
_STRING_RE = re.compile(r'"((?:[^"\\]|\\.)*)"')


def sanitize_name(name: str) -> str:
    """OpenAI's tool-name form: ``[a-zA-Z0-9_-]``, runs of others -> ``_``, 64 max."""
    return re.sub(r"[^a-zA-Z0-9_-]+", "_", name).strip("_")[:64]


def build_prompt(
    query: str, tools: Sequence[ToolRecord], k: int, descriptions: bool
) -> str:
    """The selection prompt: the request, the shortlist, and the answer format."""
    lines = []
    for tool in tools:
        line = f"- {tool.name}"
        if descriptions and tool.description:
            text = " ".join(tool.description.split())
            line += f": {text[:DESCRIPTION_CHARS]}"
        lines.append(line)
    return (
        "You select tools for an AI agent.\n"
        f"Request:\n{query.strip()}\n\n"
        "Available tools:\n" + "\n".join(lines) + "\n\n"
        f"Choose at most {k} tools that the agent needs for this request, most "
        "useful first. If none is needed, answer []. Answer with a JSON array of "
        'tool names only, for example ["tool_a", "tool_b"], and nothing else.'
    )


def _candidate_strings(answer: str) -> list[str]:
    """Strings from the answer's JSON array, even if cut off or wrapped in prose."""
    start = answer.find("[")
    body = answer[start + 1 :] if start >= 0 else answer
    end = body.find("]")
    body = body[:end] if end >= 0 else body
    try:
        parsed = json.loads("[" + body + "]")
        if isinstance(parsed, list):
            return [str(x) for x in parsed if isinstance(x, (str, int))]
    except (ValueError, RecursionError):  # an answer of 10,000 "{" is not JSON
        pass
    quoted = _STRING_RE.findall(body)
    if quoted:
        return [q.replace('\\"', '"') for q in quoted]
    return [p.strip(" \t'`*-") for p in re.split(r"[,\n]", body) if p.strip()]


def parse_answer(answer: str, names: Sequence[str]) -> list[str]:
    """Known tool names in the answer, in order, without repeats.

    Matches the exact name, then case-insensitively, then the sanitised form, so a
    model that answers ``Website_Screenshot_capture`` still finds
    ``Website Screenshot/capture``.
    """
    exact = {n: n for n in names}
    lower = {n.lower(): n for n in names}
    clean = {sanitize_name(n).lower(): n for n in names}
    picked: dict[str, None] = {}
    for raw in _candidate_strings(answer or ""):
        text = raw.strip()
        name = exact.get(text) or lower.get(text.lower())
        name = name or clean.get(sanitize_name(text).lower())
        if name:
            picked.setdefault(name, None)
    return list(picked)


def shortlist(ctx: ScoreContext, size: int) -> tuple[list[int], Scored]:
    """Allowed tools ranked by the hybrid (or BM25F) score, best ``size`` first."""
    base = hybrid(ctx) if ctx.semantic is not None else bm25f(ctx)
    rows = np.flatnonzero(ctx.allowed)
    order = np.lexsort((ctx.snapshot.order[rows], -base.scores[rows]))
    return [int(r) for r in rows[order][:size]], base


def _ask(llm: LLM, prompt: str, timeout: float | None) -> str:
    """Call the model, giving up after ``timeout`` seconds (the thread may linger)."""
    if timeout is None:
        return llm(prompt)
    pool = ThreadPoolExecutor(max_workers=1)
    try:
        return pool.submit(llm, prompt).result(timeout=timeout)
    finally:
        pool.shutdown(wait=False)


def _fallback(ctx: ScoreContext, reason: str, note: str) -> Scored:
    """Keyword scores, marked with why the model's answer was not used."""
    out = keyword(ctx)
    out.fallback_reason = reason
    out.notes.append(note)
    return out


def llm_scorer(ctx: ScoreContext) -> Scored:
    """Ask the model to choose from the shortlist; keyword fallback on failure."""
    if ctx.llm is None:
        return _fallback(
            ctx, "llm_unavailable", "No LLM endpoint; keyword scorer used."
        )
    rows, base = shortlist(ctx, ctx.snapshot.settings.llm_shortlist)
    tools = [ctx.snapshot.tools[r] for r in rows]
    k = ctx.request.max_candidates
    prompt = build_prompt(
        ctx.query.text, tools, k, ctx.snapshot.settings.llm_descriptions
    )
    try:
        answer = _ask(ctx.llm, prompt, ctx.deadline.remaining())
    except FutureTimeout:
        return _fallback(ctx, "llm_timeout", "The LLM did not answer in time.")
    except Exception as exc:  # any endpoint failure falls back to keywords
        return _fallback(
            ctx, "llm_error", f"The LLM call failed ({type(exc).__name__})."
        )
    picked = parse_answer(answer, [t.name for t in tools])[:k]
    if not picked:
        return _fallback(ctx, "llm_unparseable", "The LLM answer named no known tool.")
    scores = np.zeros(ctx.n)
    by_name = {t.name: r for t, r in zip(tools, rows, strict=True)}
    for rank, name in enumerate(picked):
        scores[by_name[name]] = 1.0 - 0.5 * rank / len(picked)
    signals = {"llm": scores, "relevance": base.scores}
    out = Scored("llm", scores, signals, notes=list(base.notes))
    out.extras["llm_prompt"] = prompt
    out.extras["llm_answer"] = answer
    return out
