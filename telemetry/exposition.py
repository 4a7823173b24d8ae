"""One scrape: every process's metrics, their memory, and the database's gauges.

In multiprocess mode (``PROMETHEUS_MULTIPROC_DIR``) the values of every process
that shares the directory (the web workers, and under ``make run`` the Celery
worker too) are added up by prometheus_client's ``MultiProcessCollector``. A
directory belongs to one host (one pid namespace): a pid names one process
there, so the live gauges of a pid that no longer runs are dropped here, at
scrape time, with no hook in gunicorn or Celery. Never share the directory
between containers: two processes of the same pid would write the same file.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterator
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest, multiprocess
from prometheus_client.core import GaugeMetricFamily, Metric

from config.processes import pid_alive
from telemetry.metrics import REGISTRY

LIVE_FILE = re.compile(r"^gauge_live\w*?_(\d+)\.db$")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def multiprocess_dir() -> str:
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")


def render(*, database: bool = True) -> bytes:
    """The text format of one scrape; ``database``: with the database's gauges
    (the web's /metrics; a worker's own endpoint leaves them to the web)."""
    registry = CollectorRegistry()
    folder = multiprocess_dir()
    if folder:
        forget_dead_processes(folder)
        multiprocess.MultiProcessCollector(registry, path=folder)
    else:
        registry.register(_Own())
    registry.register(ProcessMemory(folder))
    if database:
        from telemetry.collector import DatabaseCollector

        registry.register(DatabaseCollector())
    return generate_latest(registry)


class _Own:
    """This process's metrics (one process: no directory to add up)."""

    def collect(self) -> Iterator[Metric]:
        yield from REGISTRY.collect()


def live_pids(folder: str) -> set[int]:
    """The pids of the processes that wrote live gauges to ``folder``."""
    pids = set()
    for path in glob.glob(os.path.join(folder, "gauge_live*_*.db")):
        found = LIVE_FILE.match(os.path.basename(path))
        if found:
            pids.add(int(found.group(1)))
    return pids


def forget_dead_processes(folder: str) -> None:
    """Drop the live gauges of processes that are gone (their counters stay:
    what a dead worker counted was still counted)."""
    for pid in live_pids(folder):
        if not pid_alive(pid):
            multiprocess.mark_process_dead(pid, folder)


class ProcessMemory:
    """``quiver_process_resident_memory_bytes`` of each live process, read from
    /proc when the scrape asks (Linux; nothing elsewhere): no process pays for
    it between scrapes."""

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(
            "quiver_process_resident_memory_bytes",
            "Resident memory of each live Quiver process (web, worker).",
            labels=["pid", "role"],
        )
        pids = live_pids(self.folder) if self.folder else {os.getpid()}
        for pid in sorted(pids | {os.getpid()}):
            found = _memory(pid)
            if found is not None:
                family.add_metric([str(pid), found[1]], found[0])
        yield family


def _memory(pid: int) -> tuple[int, str] | None:
    """(resident bytes, role) of a running process, or None."""
    proc = Path("/proc") / str(pid)
    try:
        resident = int((proc / "statm").read_text().split()[1]) * PAGE_SIZE
        command = (proc / "cmdline").read_bytes().replace(b"\0", b" ")
    except (OSError, ValueError, IndexError):
        return None
    return resident, role_of(command.decode(errors="replace"))


def role_of(command: str) -> str:
    if "celery" in command:
        return "worker"
    if "gunicorn" in command:
        return "web"
    return "other"
