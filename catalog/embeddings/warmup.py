"""A web process loads its query path as it starts (``config/wsgi.py``)."""

from __future__ import annotations

import logging
import threading

from django.conf import settings

from catalog.embeddings.backends import LocalMiniLMBackend, backend_from_settings

log = logging.getLogger(__name__)


def warm_up_in_background() -> threading.Thread:
    """Load the query path (the int8 graph, and the static encoder when one is
    built) in a thread, so the process's first answer does not pay for it (~0.5 s
    per process in ``make run``). The graphs and the encoder are shared by every
    backend object of the process, and a request that comes meanwhile waits on
    the same load instead of starting a second one."""
    thread = threading.Thread(target=_warm_up, name="quiver-warm-up", daemon=True)
    thread.start()
    return thread


def _warm_up() -> None:
    try:
        backend = backend_from_settings(dict(settings.QUIVER_EMBEDDINGS))
        if isinstance(backend, LocalMiniLMBackend):
            backend.warm_up()
    except Exception:  # the first request will load it, or report what is wrong
        log.exception("warming up the query model failed")
