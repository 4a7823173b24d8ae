"""A snippet run by a fresh Python at the project's root: what a new process of the
app does, whatever this test process imported already (numpy, the model...)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_python(
    script: str, env: dict[str, str] | None = None, timeout: float = 300
) -> list[str]:
    """The snippet's lines of output; its errors fail the test, shown in full."""
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()
