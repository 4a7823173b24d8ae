"""How long a decision outlives a change: /select under load while a key is
revoked, its maker deactivated, its catalogs narrowed, a tool disabled or the
catalog's settings changed (issue 32: nothing bought with a weaker guarantee).

Run (``make bench-staleness``)::

    .venv/bin/python -m config.devstack test -- .venv/bin/python bench/staleness.py

Options: ``--repeats N`` (5 of each change), ``--clients N`` (4), ``--before S`` /
``--after S`` (seconds of load around each change: 1.5 / 1.5), ``--keep``.

MetaTool's catalog (199 tools) is built as ``bench/speed.py`` builds it, and
gunicorn runs as ``make run`` starts it (``bench/_loadstack.py``: two threaded
workers). ``--clients`` threads send ``POST /api/v1/select`` as fast as answers
come back, cycling over five queries, so nearly every answer comes from the answer
cache: the case where a kept decision would show. Meanwhile this process makes the
change through the service a person would use (or, for the key's maker, the
ORM's update, as the Django admin's save does) and notes when its transaction
returned (the commit). Every answer is classed as given under the old state or the
new one:

* **sent after the commit, old state**: must be 0 (a request that starts after a
  change is decided on it);
* **window**: the longest an old-state answer arrived after the commit (requests
  already past their reads when the change committed, finishing), in ms;
* **first new-state answer**: how long after the commit the first answer showing
  the change arrived.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import numpy as np  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402

from bench import speed  # noqa: E402  (sets up Django)
from bench._loadstack import gunicorn  # noqa: E402
from catalog.models import Catalog, Tool  # noqa: E402
from catalog.services.catalogs import create_catalog  # noqa: E402
from catalog.services.tools import set_tool_status  # noqa: E402
from identity.models import ApiClient  # noqa: E402
from identity.services.clients import (  # noqa: E402
    change_api_client,
    create_api_client,
    revoke_api_client,
)
from selection.services.settings import update_selection_settings  # noqa: E402

QUERIES = (
    "what's the weather like in Paris tomorrow?",
    "find me a cheap flight to Tokyo",
    "translate this sentence into Spanish",
    "show me recipes with chickpeas",
    "what is the stock price of Apple",
)
# Each change's old state, read from one answer: (status, body) -> old or not.
Judge = Callable[[int, dict[str, Any]], bool | None]
PREFIX = f"{speed.PREFIX}-stale"  # speed.clean_up removes its keys and catalog
OTHER = f"{speed.PREFIX}-staleness-other"
Scenario = Callable[[], tuple[str, Judge, Callable[[], None], tuple[str, ...]]]


@dataclass
class Answer:
    sent: float
    received: float
    old: bool | None  # None: this answer cannot tell (another query's)


@dataclass
class Outcome:
    change: str
    answers: list[Answer] = field(default_factory=list)
    commits: list[float] = field(default_factory=list)
    late: list[float] = field(default_factory=list)  # window per repeat, ms
    first_new: list[float] = field(default_factory=list)
    violations: int = 0


class Load:
    """``clients`` threads sending /select with one key until stopped."""

    def __init__(
        self, url: str, key: str, slug: str, clients: int, queries: tuple[str, ...]
    ) -> None:
        self.url, self.slug, self.stop = url, slug, threading.Event()
        self.queries = queries
        self.headers = {"Authorization": f"Bearer {key}"}
        self.seen: list[tuple[float, float, int, dict[str, Any]]] = []
        self.threads = [
            threading.Thread(target=self._run, args=(n,)) for n in range(clients)
        ]

    def __enter__(self) -> Load:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join()

    def _run(self, number: int) -> None:
        with httpx.Client(headers=self.headers, timeout=60) as client:
            turn = number
            while not self.stop.is_set():
                query = self.queries[turn % len(self.queries)]
                body = {"catalog": self.slug, "query": query}
                turn += 1
                sent = time.monotonic()
                response = client.post(f"{self.url}/api/v1/select", json=body)
                answer = response.json() if response.status_code == 200 else {}
                self.seen.append((sent, time.monotonic(), response.status_code, answer))


def measure(
    outcome: Outcome, web_url: str, slug: str, args: argparse.Namespace,
    prepare: Scenario,
) -> None:  # fmt: skip
    """One repeat: load, the change, load; every answer judged old or new."""
    key, judge, change, queries = prepare()
    with Load(web_url, key, slug, args.clients, queries) as load:
        time.sleep(args.before)
        change()
        committed = time.monotonic()
        time.sleep(args.after)
    answers = [Answer(s, r, judge(status, body)) for s, r, status, body in load.seen]
    outcome.answers += answers
    outcome.commits.append(committed)
    outcome.violations += sum(a.old is True and a.sent > committed for a in answers)
    late = [a.received - committed for a in answers if a.old is True]
    outcome.late.append(max(0.0, *late) * 1000 if late else 0.0)
    new = [a.received - committed for a in answers if a.old is False]
    after = [t for t in new if t >= 0]
    outcome.first_new.append(min(after) * 1000 if after else float("nan"))


def key_for(slug: str, name: str, actor: Any = None) -> tuple[ApiClient, str]:
    return create_api_client(
        name, "agent", catalogs=[slug], rate_limit_per_minute=0, actor=actor
    )


def scenarios(slug: str, counter: list[int], tool: str) -> dict[str, Scenario]:
    """Each change: a fresh key, how to tell an old-state answer, the change, and
    the queries to send (``tool`` is the first query's best pick)."""

    def fresh(what: str, actor: Any = None) -> tuple[ApiClient, str]:
        counter[0] += 1
        return key_for(slug, f"{PREFIX}-{what}-{counter[0]}", actor)

    def answered(status: int, body: dict[str, Any]) -> bool:
        return status == 200

    def revoke() -> tuple[str, Judge, Callable[[], None], tuple[str, ...]]:
        client, key = fresh("revoke")
        return key, answered, lambda: revoke_api_client(client, actor=None), QUERIES

    def maker() -> tuple[str, Judge, Callable[[], None], tuple[str, ...]]:
        counter[0] += 1
        person = get_user_model().objects.create_superuser(
            f"{PREFIX}-maker-{counter[0]}", "maker@example.com", "pw-12345678"
        )
        _client, key = fresh("maker", actor=person)
        people = get_user_model().objects.filter(pk=person.pk)
        return key, answered, lambda: people.update(is_active=False), QUERIES

    def narrow() -> tuple[str, Judge, Callable[[], None], tuple[str, ...]]:
        client, key = fresh("narrow")

        def change() -> None:
            change_api_client(client, actor=None, catalogs=[OTHER])

        return key, answered, change, QUERIES

    def disable() -> tuple[str, Judge, Callable[[], None], tuple[str, ...]]:
        _client, key = fresh("disable")
        picked = Tool.objects.get(catalog__slug=slug, name=tool)
        set_tool_status(picked, "active", actor=None)

        def offered(status: int, body: dict[str, Any]) -> bool | None:
            if status != 200:
                return None
            return tool in [t["name"] for t in body.get("tools", [])]

        def change() -> None:
            set_tool_status(picked, "disabled", actor=None)

        return key, offered, change, QUERIES[:1]

    def settings() -> tuple[str, Judge, Callable[[], None], tuple[str, ...]]:
        _client, key = fresh("settings")
        catalog = Catalog.objects.get(slug=slug)
        counter[0] += 1
        data = {"candidate_pool": 40 + counter[0] % 10}
        version = {"new": 10**9}

        def change() -> None:
            version["new"] = update_selection_settings(catalog, data, actor=None)[1]

        def old(status: int, body: dict[str, Any]) -> bool | None:
            if status != 200:
                return None
            return int(body.get("settings_version", 0)) < version["new"]

        return key, old, change, QUERIES

    return {
        "key revoked": revoke,
        "key's maker deactivated": maker,
        "key's catalogs narrowed": narrow,
        "tool disabled": disable,
        "settings changed": settings,
    }


def report(outcomes: list[Outcome], args: argparse.Namespace) -> str:
    lines = [
        f"\n### Staleness ({args.repeats} repeats of each change, {args.clients} "
        f"clients, MetaTool's catalog; load average {os.getloadavg()[0]:.1f})\n",
        "| change | answers | sent after the commit, old state | window: old "
        "answers after the commit, max (p50 of repeats) ms | first new-state "
        "answer after the commit, p50 ms |",
        "|---|---:|---:|---:|---:|",
    ]
    for o in outcomes:
        lines.append(
            f"| {o.change} | {len(o.answers):,} | {o.violations} | "
            f"{max(o.late):.1f} ({np.median(o.late):.1f}) | "
            f"{np.nanmedian(o.first_new):.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--before", type=float, default=1.5)
    parser.add_argument("--after", type=float, default=1.5)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args(argv)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    call_command("migrate", verbosity=0, interactive=False)
    speed.clean_up()
    log_dir = Path(tempfile.mkdtemp(prefix="bench-staleness-"))
    outcomes: list[Outcome] = []
    try:
        slug = speed.build_catalog(speed.METATOOL_SIZE, True).catalog.slug
        create_catalog(OTHER, "Staleness probe", actor=None)
        with gunicorn(2, log_dir) as web:
            _client, key = key_for(slug, f"{PREFIX}-probe")
            first = httpx.post(
                f"{web.url}/api/v1/select",
                json={"catalog": slug, "query": QUERIES[0]},
                headers={"Authorization": f"Bearer {key}"},
                timeout=120,
            ).json()
            counter = [0]
            plan = scenarios(slug, counter, first["tools"][0]["name"])
            for change, prepare in plan.items():
                outcome = Outcome(change)
                for _ in range(args.repeats):
                    measure(outcome, web.url, slug, args, prepare)
                speed.say(f"{change}: {outcome.violations} late decisions")
                outcomes.append(outcome)
    finally:
        if not args.keep:
            speed.clean_up()
            get_user_model().objects.filter(username__startswith=PREFIX).delete()
        shutil.rmtree(log_dir, ignore_errors=True)
    print(report(outcomes, args), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
