"""A web process loads the query model as it starts (config.wsgi), so its first
answer does not pay ~0.5 s for it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
PROBE = """
import threading
import config.wsgi
from catalog.embeddings.backends import local_onnx_encoder
warming = [t for t in threading.enumerate() if t.name == "quiver-warm-up"]
for thread in warming:
    thread.join(120)
print(len(warming), sorted(local_onnx_encoder()._sessions))
"""


def test_importing_the_wsgi_app_loads_the_query_graph_in_a_thread():
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    assert done.stdout.strip().splitlines()[-1] == "1 [('int8', 1)]", done.stderr
