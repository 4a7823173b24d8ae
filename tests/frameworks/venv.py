"""Build the agent frameworks' own venv (`make frameworks`; `make pytest` runs it).

The frameworks pin the mcp 1.x client, and Quiver's .venv has mcp 2.x (its
server), so they get a venv of their own, .quiver/frameworks/venv, made from
tests/frameworks/requirements.txt plus the Python client (client/, on the venv's
path: its code is the checkout's). A stamp in the venv holds the hash of what it
was built from (that file, client/pyproject.toml, this Python's version): the
same hash reuses the venv whatever the files' times say, another rebuilds it
from scratch. Standard library only: it runs before any venv exists.

    python3 tests/frameworks/venv.py          # build or reuse; prints the path
    python3 tests/frameworks/venv.py --check  # exit 1 if it would rebuild
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REQUIREMENTS = ROOT / "tests" / "frameworks" / "requirements.txt"
CLIENT = ROOT / "client"
VENV = ROOT / ".quiver" / "frameworks" / "venv"
PYTHON = VENV / "bin" / "python"
STAMP = VENV / ".installed"
# What the tests import: a missing one fails the build, not a test.
IMPORTS = (
    "pydantic_ai.mcp, pydantic_ai.models.function, agents.mcp, "
    "langchain_mcp_adapters.client, langgraph.prebuilt, langgraph_bigtool, "
    "quiver_client.langgraph"
)


def wanted() -> str:
    """The hash of everything the venv is made from."""
    digest = hashlib.sha256()
    for path in (REQUIREMENTS, CLIENT / "pyproject.toml"):
        digest.update(path.read_bytes())
    digest.update(sys.version.encode())
    return digest.hexdigest()


def is_current() -> bool:
    return PYTHON.exists() and STAMP.exists() and STAMP.read_text() == wanted()


def pip(*args: str) -> None:
    command = [str(PYTHON), "-m", "pip", "install", "-q", *args]
    subprocess.run(command, check=True, cwd=ROOT)


def build() -> None:
    """A new venv: the file's exact versions without resolving (it pins every
    requirement: ``pip check`` fails the build if one is missing, and resolving
    would take twice as long), the client on the path (a .pth file, as an
    editable install would add without building anything; its httpx is pinned
    in the file), then the imports, once."""
    shutil.rmtree(VENV, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    pip("--no-deps", "-r", str(REQUIREMENTS))
    site = subprocess.run(
        [str(PYTHON), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(site) / "quiver_client.pth").write_text(f"{CLIENT}\n")
    for check in (["-m", "pip", "check"], ["-c", f"import {IMPORTS}"]):
        # Quiet unless it fails: the frameworks' own import-time warnings are
        # theirs to fix, not lines in every build's output.
        done = subprocess.run(
            [str(PYTHON), *check], cwd=ROOT, capture_output=True, text=True
        )
        if done.returncode:
            sys.stderr.write(done.stdout + done.stderr)
            raise subprocess.CalledProcessError(done.returncode, check)
    STAMP.write_text(wanted())


def main(argv: list[str]) -> int:
    if "--check" in argv:
        return 0 if is_current() else 1
    if not is_current():
        started = time.monotonic()
        print(f"building {VENV.relative_to(ROOT)} (tests/frameworks/requirements.txt)")
        build()
        print(f"built in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
