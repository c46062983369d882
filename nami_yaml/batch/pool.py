"""The local backend: N tasks at once on this machine, each in a worker process of its own (forked from a
warm server that imported everything once: batch/forked.py; ``--fresh-workers``: a new Python each).

Threads only wait here (one per slot); the work happens in the worker processes, so a task that crashes
or hangs takes nothing else with it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from nami_yaml.batch import forked
from nami_yaml.batch.isolate import run_isolated
from nami_yaml.batch.job import Job
from nami_yaml.batch.results import failed_to_start

Emit = Callable[[str, Any], None]  # ("start", task id) or ("result", result)


class LocalPool:
    def __init__(self, workers: int, *, warm: bool = True):
        self.workers = max(1, workers)
        self.warm = warm and forked.available()  # forked from a warm server (batch/forked.py), else new Pythons
        self._stop = threading.Event()

    @property
    def description(self) -> str:
        return f"{self.workers} local worker{'s' if self.workers != 1 else ''}{'' if self.warm else ' (fresh)'}"

    def run(self, jobs: list[Job], emit: Emit) -> None:
        """Run every job, reporting as they start and end; returns when all have ended or been stopped."""
        with ThreadPoolExecutor(self.workers, thread_name_prefix="nami-batch") as pool:
            for job in jobs:
                pool.submit(self._one, job, emit)

    def _one(self, job: Job, emit: Emit) -> None:
        if self._stop.is_set():
            return  # never started: --resume runs it
        emit("start", job.task_id)
        try:
            result = run_isolated(job.to_json(), self._stop, warm=self.warm)
        except Exception as exc:  # the worker could not even start (no Python? no memory?)
            result = failed_to_start(job, exc)
        emit("result", result)

    def stop(self) -> None:
        """Start no new task, and stop the running ones (asked first, then killed)."""
        self._stop.set()
