"""Whether a process of this host still runs, for the parts that clean up after
one that died (a job's worker, a process's live metrics)."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """True while ``pid`` runs, even as another user's process (signal 0 checks
    without sending anything)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
