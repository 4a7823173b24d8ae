"""The reads of ``bench/tenants.py --reads``: what a key reads, for a key that sees
one catalog beside one that sees every catalog, over HTTP on one server.

The one catalog (``home``) is the largest tenant, so its tool list has a second
page. It holds two full pages of jobs and of reviews, every other catalog two
of each, written as rows (nothing here runs a job or decides a review); its audit
events are the bench's own searches. Each read is asked in turns by the two keys
of a scope (agent keys for ``/mcp`` and the catalogs and tools, curator keys for
jobs and reviews, compliance keys for the audit log), each going first every
other round; a list's next page is the URL its first page's ``next`` names.
A key of one catalog lists one catalog, so the catalogs list is also read by a
key of ``FULL`` catalogs (a full page) beside the key of them all.
Client-measured, httpx, keep-alive.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import numpy as np

PAGE = 50  # the API's page size (REST_FRAMEWORK PAGE_SIZE)
HOME_ROWS = 2 * PAGE + 10  # jobs and reviews in the one catalog: two full pages
OTHER_ROWS = 2
NAMES = 5  # tools get_tool_details asks for
MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
SCOPES = ("agent", "curator", "compliance")
FULL = PAGE  # catalogs of the key whose catalogs list is one full page


@dataclass(frozen=True)
class Plan:
    home: str  # the one catalog's slug
    names: list[str]  # NAMES of its tools
    keys: dict[tuple[str, str], str]  # (scope, "1" or "all") -> key
    total: int  # catalogs the "all" keys see


def prepare(tenants: list[Any], specs: dict[str, list], key_for: Callable) -> Plan:
    """The rows and keys the reads need (see the module's docstring)."""
    from catalog.models import Catalog, ToolReview
    from jobs.models import Job

    home = max(tenants, key=lambda t: len(t.tools))
    slugs = [t.slug for t in tenants]
    ids = dict(Catalog.objects.filter(slug__in=slugs).values_list("slug", "pk"))
    jobs, reviews = [], []
    for slug in slugs:
        for number in range(HOME_ROWS if slug == home.slug else OTHER_ROWS):
            catalog_id = ids[slug]
            jobs.append(Job(kind="import", catalog_id=catalog_id, state="succeeded"))
            reviews.append(
                ToolReview(
                    catalog_id=catalog_id,
                    tool_name=f"bench-{number}",
                    kind="new",
                    state="withdrawn",
                    proposed={"name": f"bench-{number}"},
                    proposed_hash="0" * 64,
                    diff_hash="0" * 64,
                )
            )
    Job.objects.bulk_create(jobs, batch_size=1000)
    ToolReview.objects.bulk_create(reviews, batch_size=1000)
    names = [specs[home.dataset][i].name for i in home.tools[:NAMES]]
    keys = {}
    for scope in SCOPES:
        keys[(scope, "1")] = key_for(f"reads-{scope}-1", [home.slug], scope)
        keys[(scope, "all")] = key_for(f"reads-{scope}-all", slugs, scope)
    keys[("agent", "full")] = key_for("reads-agent-full", slugs[:FULL], "agent")
    return Plan(home.slug, names, keys, len(tenants))


def mcp_body(version: str, method: str, params: dict[str, Any], number: int) -> dict:
    if version == MODERN:  # the per-request envelope
        params = {
            **params,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        }
    return {"jsonrpc": "2.0", "id": number, "method": method, "params": params}


def mcp_headers(version: str, method: str, params: dict[str, Any]) -> dict:
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": version,
    }
    if version == MODERN:  # the mirrored headers
        headers["Mcp-Method"] = method
        if "name" in params:
            headers["Mcp-Name"] = params["name"]
    return headers


class Reader:
    """One server's reads, timed per (read, key)."""

    def __init__(self, client: httpx.Client, url: str, plan: Plan) -> None:
        self.client, self.url, self.plan = client, url, plan
        self.samples: dict[tuple[str, str], list[float]] = {}
        self.cursors: dict[str, str] = {}  # "1"/"all" -> a search's list_cursor
        self.measuring = False

    def _timed(self, read: str, seen: str, send: Callable[[], httpx.Response]) -> Any:
        started = time.perf_counter()
        response = send()
        elapsed = (time.perf_counter() - started) * 1000
        if response.status_code != 200:
            raise SystemExit(f"{read}: {response.status_code} {response.text[:400]}")
        if self.measuring:
            self.samples.setdefault((read, seen), []).append(elapsed)
        return response

    def mcp(self, read: str, seen: str, method: str, params: dict, version: str) -> Any:
        read = f"/mcp {read}"
        key = self.plan.keys[("agent", seen)]
        body = mcp_body(version, method, params, len(self.samples))
        headers = {"Authorization": f"Bearer {key}"}
        headers |= mcp_headers(version, method, params)
        response = self._timed(
            read,
            seen,
            lambda: self.client.post(f"{self.url}/mcp", json=body, headers=headers),
        )
        answer = response.json()
        if "error" in answer or answer["result"].get("isError"):
            raise SystemExit(f"{read}: {response.text[:400]}")
        return answer["result"]

    def rest(
        self, read: str, seen: str, scope: str, path: str, keyed: str = ""
    ) -> None:
        """A list's first page and the page its ``next`` names (``keyed``: the
        key of that many catalogs asks, in ``seen``'s place)."""
        key = self.plan.keys[(scope, keyed or seen)]
        headers = {"Authorization": f"Bearer {key}"}
        url = f"{self.url}/api/v1/{path}"
        page = self._timed(read, seen, lambda: self.client.get(url, headers=headers))
        following = page.json().get("next")
        if following:
            self._timed(
                f"{read}, next page",
                seen,
                lambda: self.client.get(following, headers=headers),
            )

    def round(self, seen: str, query: str) -> None:
        """Every read once, for the key that sees ``seen`` catalogs."""
        home = self.plan.home
        for version, era in ((HANDSHAKE, "handshake"), (MODERN, MODERN)):
            search = {
                "name": "search_tools",
                "arguments": {"query": query, "catalog": home},
            }
            read = f"search_tools ({era})"
            found = self.mcp(read, seen, "tools/call", search, version)
            cursor = found.get("structuredContent", {}).get("list_cursor")
            self.cursors[seen] = cursor or self.cursors.get(seen, "")
            details = {
                "name": "get_tool_details",
                "arguments": {"names": self.plan.names, "catalog": home},
            }
            self.mcp(f"get_tool_details ({era})", seen, "tools/call", details, version)
            self.mcp(f"tools/list ({era})", seen, "tools/list", {}, version)
            if self.cursors[seen]:
                listed = {"cursor": self.cursors[seen]}
                read = f"tools/list, a search's cursor ({era})"
                self.mcp(read, seen, "tools/list", listed, version)
        self.rest("GET catalogs", seen, "agent", "catalogs")
        full = "full" if seen == "1" else ""
        read = f"GET catalogs (left: a key of {FULL})"
        self.rest(read, seen, "agent", "catalogs", full)
        self.rest("GET tools", seen, "agent", "tools")
        self.rest("GET tools of a catalog", seen, "agent", f"tools?catalog={home}")
        self.rest("GET jobs", seen, "curator", "jobs")
        self.rest("GET reviews", seen, "curator", "reviews?state=all")
        self.rest("GET audit", seen, "compliance", "audit")


def run(url: str, plan: Plan, queries: list[str], rounds: int, warmup: int) -> Reader:
    """``warmup`` then ``rounds`` rounds, the two keys in turns."""
    with httpx.Client(timeout=300) as client:
        reader = Reader(client, url, plan)
        for number in range(warmup + rounds):
            reader.measuring = number >= warmup
            query = queries[number % len(queries)]
            for seen in ("1", "all")[:: 1 if number % 2 else -1]:
                reader.round(seen, query)
    return reader


def ms(samples: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(samples), q))


def table(reader: Reader) -> str:
    """p50/p95 a read for each key, and the p50 ratio (a next page the one
    catalog's key has not: against its first page)."""
    total = reader.plan.total
    lines = [
        f"| read | key sees 1: p50 / p95 ms | key sees {total}: p50 / p95 ms "
        "| p50 ratio |",
        "|---|---:|---:|---:|",
    ]
    reads = list(dict.fromkeys(read for read, _ in reader.samples))
    for read in reads:
        many = reader.samples.get((read, "all"))
        one = reader.samples.get((read, "1"))
        base, mark = one, ""
        if one is None:  # no next page for one catalog
            base, mark = reader.samples[(read.removesuffix(", next page"), "1")], " *"
        shown = f"{ms(one, 50):.1f} / {ms(one, 95):.1f}" if one else "-"
        lines.append(
            f"| {read} | {shown} | {ms(many, 50):.1f} / {ms(many, 95):.1f} | "
            f"{ms(many, 50) / ms(base, 50):.2f}x{mark} |"
        )
    return "\n".join(lines)
