"""The tenants of ``bench/tenants.py``: small catalogs cut from the dev sets' tools.

Each tenant is a team's catalog of 8 to 150 tools (median about 25, log-normal):
StableToolBench tenants take whole APIs (every endpoint of a product, as a team
imports an MCP server), Seal-Tools and MetaTool tenants a random handful of tools.
Tools repeat across tenants (the same public tools in many teams' catalogs), as
they do in a company. Rows are written the way ``bench/speed.py`` writes them
(the fields the services set; vectors by one binary COPY per chunk); each
distinct tool text is embedded once with the app's backend and cached under
``.quiver/bench-cache/`` (``bench._data.EmbeddingCache``).

Call ``build`` only once Django is set up (``bench.speed`` sets it up).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from bench._data import EmbeddingCache, get_embedder

DATASETS = ("stabletoolbench", "sealtools", "metatool")
MIN_TOOLS, MEDIAN_TOOLS, MAX_TOOLS = 8, 25, 150
PREFIX = "tenant"
CHUNK = 4000


@dataclass(frozen=True)
class Tenant:
    slug: str
    dataset: str
    tools: tuple[int, ...]  # indexes into the data set's specs


def size_of(rng: random.Random) -> int:
    """A small catalog's size: log-normal around ``MEDIAN_TOOLS``, clipped."""
    drawn = math.exp(rng.gauss(math.log(MEDIAN_TOOLS), 0.7))
    return int(min(MAX_TOOLS, max(MIN_TOOLS, round(drawn))))


def families(specs: list) -> list[list[int]]:
    """Tools grouped by product (the name before ``__``), in file order."""
    groups: dict[str, list[int]] = {}
    for index, spec in enumerate(specs):
        groups.setdefault(spec.name.split("__", 1)[0], []).append(index)
    return list(groups.values())


def plan(count: int, specs: dict[str, list], seed: int) -> list[Tenant]:
    """``count`` tenants, the data sets in turn, the same ones for a seed."""
    rng = random.Random(seed)
    grouped = {"stabletoolbench": families(specs["stabletoolbench"])}
    tenants = []
    for number in range(count):
        dataset = DATASETS[number % len(DATASETS)]
        size = min(size_of(rng), len(specs[dataset]))
        if dataset in grouped:
            chosen: list[int] = []
            for group in rng.sample(grouped[dataset], len(grouped[dataset])):
                chosen += group
                if len(chosen) >= size:
                    break
        else:
            chosen = rng.sample(range(len(specs[dataset])), size)
        slug = f"{PREFIX}-{number:04d}"
        tenants.append(Tenant(slug, dataset, tuple(sorted(chosen))))
    return tenants


def vectors_of(
    specs: dict[str, list], say: Callable[[str], None]
) -> dict[str, np.ndarray]:
    """Each data set's tool vectors (row-aligned with its specs), from the cache."""
    from catalog.embedding_text import embedding_text

    cache = EmbeddingCache(get_embedder())
    found = {}
    for dataset, rows in specs.items():
        started = time.perf_counter()
        found[dataset] = cache.get([embedding_text(spec) for spec in rows])
        say(f"{dataset}: {len(rows)} vectors in {time.perf_counter() - started:.1f}s")
    return found


def _chunks(items: list, size: int) -> Iterator[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def build(
    tenants: list[Tenant], specs: dict[str, list], say: Callable[[str], None]
) -> dict[str, int]:
    """Write the tenants' catalogs, tools, names and vectors; slug -> catalog id.
    Each catalog ends with its model active, as after its embedding job."""
    from django.db.models import F
    from django.utils import timezone

    import bench.speed as sp
    from catalog.embedding_text import embedding_text, text_hash
    from catalog.models import Catalog, Tool
    from catalog.names import reclaim
    from catalog.naming import assign_provider_names
    from catalog.services.embeddings import current_backend

    vectors = vectors_of(specs, say)
    model_id = current_backend().model_id
    catalogs = Catalog.objects.bulk_create(
        [
            Catalog(slug=t.slug, name=t.slug, description="bench/tenants.py")
            for t in tenants
        ]
    )
    ids = {c.slug: c.pk for c in catalogs}
    rows: list[tuple[Tool, str, np.ndarray]] = []
    for tenant in tenants:
        catalog = Catalog(pk=ids[tenant.slug], slug=tenant.slug)
        chosen = [specs[tenant.dataset][i] for i in tenant.tools]
        names = assign_provider_names([spec.name for spec in chosen], set())
        for index, spec in zip(tenant.tools, chosen, strict=True):
            tool = sp.tool_row(catalog, spec, names[spec.name])
            rows.append((tool, embedding_text(spec), vectors[tenant.dataset][index]))
    written = 0
    for chunk in _chunks(rows, CHUNK):
        tools = Tool.objects.bulk_create(
            [tool for tool, _, _ in chunk], batch_size=1000
        )
        by_catalog: dict[int, list[int]] = {}
        for position, tool in enumerate(tools):
            by_catalog.setdefault(tool.catalog_id, []).append(position)
        for catalog_id, positions in by_catalog.items():
            sp.copy_embeddings(
                catalog_id,
                model_id,
                [tools[p].pk for p in positions],
                [text_hash(chunk[p][1], model_id) for p in positions],
                np.stack([chunk[p][2] for p in positions]).astype(np.float32),
            )
        written += len(chunk)
        say(f"{written}/{len(rows)} tools and vectors written")
    for catalog_id in ids.values():
        reclaim(catalog_id)  # the names the rows hold (catalog.names)
    Catalog.objects.filter(pk__in=list(ids.values())).update(
        active_embedding_model=model_id,
        version=F("version") + 1,
        updated=timezone.now(),
    )
    return ids
