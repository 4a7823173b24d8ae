"""The fast tier (``make test-fast``, tests/fast.txt) stays runnable without Django:
every file it lists exists and is collected with neither tests/conftest.py nor
pytest-django, so a listed module that imports Django's settings or the database
fails here, in make test, and not first on a developer's machine."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.docs.env_reads import ROOT

LIST = ROOT / "tests" / "fast.txt"


def test_every_listed_path_exists():
    listed = [line.strip() for line in LIST.read_text().splitlines() if line.strip()]

    assert listed and all((ROOT / path).exists() for path in listed), listed


def test_the_fast_tier_is_collected_without_django_or_the_shared_fixtures():
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "@tests/fast.txt", "--noconftest"]
        + ["-p", "no:django", "-p", "no:xdist", "-p", "no:cacheprovider"]
        + ["--collect-only", "-q", "-W", "ignore::pytest.PytestConfigWarning"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        env={"PATH": "/usr/bin:/bin", "HOME": str(ROOT)},
    )

    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    collected = re.search(r"(\d+) tests collected", run.stdout)
    assert collected and int(collected[1]) > 500, run.stdout[-500:]
