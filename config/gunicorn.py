"""gunicorn's settings for Quiver, the same for ``make run`` (config.devstack),
the Docker image and the tests' servers: ``gunicorn -c python:config.gunicorn
config.wsgi:application --bind ...``.

Threaded workers (``gthread``): a request waiting on a slow upstream tool holds
one thread, not a whole process, so selections and ``/healthz`` keep answering
while calls run (the call path leaves threads free: ``calls.limits``). The
worker's main thread keeps its heartbeat while its threads work, so ``timeout``
kills only a process that stopped answering altogether; the call path still
ends every call well before it (``QUIVER_CALL_TIMEOUT_MAX_SECONDS``).
"""

from __future__ import annotations

from config.env import web_server

_web = web_server()

worker_class = "gthread"
workers = _web.workers
threads = _web.threads
timeout = _web.timeout_s
accesslog = "-"
# The request line without its query string, and no Referer: a query may carry
# what no log keeps (the code single sign-on's callback receives, and the
# Referer of the pages loaded from that URL).
access_log_format = '%(h)s %(l)s %(u)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(b)s "%(a)s"'
