"""A web process gets ready to answer as it starts (``config/wsgi.py``): in a thread,
it imports every view, loads the query path (the int8 graph, and the static encoder
when one is built) and builds the snapshots of the catalogs it can hold in memory
(the most recently changed first, until half its memory budget is used: the rest
is for what requests bring), so the first answer of each process does not pay for
them (~0.5 s in ``make run``:
~0.17 s of imports and first queries, ~0.08 s for the demo catalog's snapshot,
~0.3 s for the model). A request that comes meanwhile loads what it needs itself;
the graphs and the encoder are loaded once, under their locks.
"""

from __future__ import annotations

import logging
import threading

from django.conf import settings
from django.db import connections
from django.db.models import Count, Q
from django.urls import get_resolver

from catalog.choices import ToolStatus
from catalog.models import Catalog
from catalog.services.embeddings import current_backend
from embeddings.backends import LocalMiniLMBackend
from selection.adapters.kept import STORE
from selection.adapters.snapshots import get_snapshot

log = logging.getLogger(__name__)
# The share of the memory budget the warm-up may fill.
WARM_SHARE = 0.5


def warm_up_in_background() -> threading.Thread:
    thread = threading.Thread(target=_warm_up, name="quiver-warm-up", daemon=True)
    thread.start()
    return thread


def _warm_up() -> None:
    try:
        get_resolver().url_patterns  # noqa: B018  (imports every view)
        backend = current_backend()  # the one selection embeds queries with
        if isinstance(backend, LocalMiniLMBackend):
            backend.warm_up()
        for catalog in catalogs_to_warm():
            if STORE.kept_bytes() >= STORE.budget() * WARM_SHARE:
                break
            get_snapshot(catalog)
    except Exception:  # the first request loads it, or reports what is wrong
        log.exception("warming up the web process failed")
    finally:
        connections.close_all()  # this thread's own connections


def catalogs_to_warm() -> list[Catalog]:
    """Catalogs whose snapshot holds its vectors in process (up to
    ``QUIVER_INPROCESS_VECTORS_MAX`` active tools): larger ones take a minute or
    more to build and are built by their first request, as before. The most
    recently changed first."""
    largest = int(settings.QUIVER_INPROCESS_VECTORS_MAX)
    active = Count("tools", filter=Q(tools__status=ToolStatus.ACTIVE))
    found = Catalog.objects.annotate(active=active).filter(active__lte=largest)
    return list(found.order_by("-updated", "pk"))
