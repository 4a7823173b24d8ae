"""A worker step that sends itself one task on a fixed interval (jobs.send, at
a low priority), for sweeps and due-work checks. A subclass names the ``task``
and may override ``every`` (seconds, read when the worker starts) and
``enabled``; add it with ``app.steps["worker"].add(Subclass)``."""

from __future__ import annotations

from typing import Any

from celery import bootsteps

from jobs import services as jobs


class PeriodicSend(bootsteps.StartStopStep):
    requires = {"celery.worker.components:Timer"}
    task = ""
    priority = 10

    def __init__(self, worker: Any, **kwargs: Any) -> None:
        super().__init__(worker, **kwargs)
        self.tref: Any = None

    def every(self) -> float:
        return 60.0

    def enabled(self) -> bool:
        return True

    def start(self, worker: Any) -> None:
        if self.enabled():
            self.tref = worker.timer.call_repeatedly(
                self.every(), jobs.send, (self.task,), priority=self.priority
            )

    def stop(self, worker: Any) -> None:
        if self.tref is not None:
            self.tref.cancel()
