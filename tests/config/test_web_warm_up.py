"""A web process gets ready to answer as it starts (config.wsgi, selection.warmup):
the query model loads in a thread, and the snapshots of the catalogs it can hold are
built, so its first answer does not pay ~0.5 s for them."""

from __future__ import annotations

import pytest

from catalog.models import Catalog
from selection.adapters.snapshots import cached_catalogs
from selection.warmup import warm_up_in_background
from tests.factories import make_tool
from tests.python_probe import run_python

PROBE = """
import threading
import config.wsgi
from embeddings.backends import local_onnx_encoder
warming = [t for t in threading.enumerate() if t.name == "quiver-warm-up"]
for thread in warming:
    thread.join(120)
print(len(warming), sorted(local_onnx_encoder()._sessions))
"""


def test_importing_the_wsgi_app_loads_the_query_graph_in_a_thread():
    assert run_python(PROBE)[-1] == "1 [('int8', 1)]"


@pytest.mark.django_db(transaction=True)
def test_the_warm_up_builds_the_snapshots_of_the_catalogs_it_can_hold(settings):
    small = Catalog.objects.create(slug="small", name="Small")
    large = Catalog.objects.create(slug="large", name="Large")
    make_tool(small, "get_weather")
    for name in ("a_tool", "b_tool", "c_tool"):
        make_tool(large, name)
    settings.QUIVER_INPROCESS_VECTORS_MAX = 2
    warm_up_in_background().join(120)
    assert small.pk in cached_catalogs()
    assert large.pk not in cached_catalogs()  # built by its first request
