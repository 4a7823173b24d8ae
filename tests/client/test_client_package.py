"""client/ is its own package: httpx its only requirement, typed, no Django."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

CLIENT = Path(__file__).resolve().parents[2] / "client"


def test_the_client_package_requires_httpx_alone_and_ships_py_typed():
    project = tomllib.loads((CLIENT / "pyproject.toml").read_text())
    assert project["project"]["name"] == "quiver-client"
    assert [d.split(">")[0] for d in project["project"]["dependencies"]] == ["httpx"]
    assert (CLIENT / "quiver_client" / "py.typed").is_file()
    package_data = project["tool"]["setuptools"]["package-data"]["quiver_client"]
    assert "py.typed" in package_data


def test_importing_the_client_loads_no_django_celery_or_torch():
    probe = (
        "import sys, quiver_client; "
        "heavy = {m.split('.')[0] for m in sys.modules} & "
        "{'django', 'celery', 'torch', 'rest_framework', 'numpy'}; "
        "print(sorted(heavy))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        cwd=CLIENT.parent / "examples",  # not the project root: no local packages
        check=True,
    )
    assert done.stdout.strip() == "[]"
