"""``python -m nami_yaml.batch.worker``: runs one job (JSON on stdin) in this process and reports on stdout.

One process per task, so a crash or a hung tool in one task cannot take down the others. It writes JSON
lines: ``{"type": "started", "session": ID}`` once its session is recorded, then ``{"type": "result",
"result": {...}}``. Anything else that writes to stdout (a Python tool's print) is sent to stderr instead.
SIGTERM stops the task (status ``interrupted``); the wall time stops it as ``timeout``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from nami_yaml.batch.job import Job
from nami_yaml.batch.proctree import adopt_orphans, descendants, kill_tree
from nami_yaml.batch.task_run import TaskRun
from nami_yaml.privacy import keep_environment_private

_PARENT_POLL = 1.0


def claim_stdout() -> IO[str]:
    """The real stdout, for reports only; file descriptor 1 becomes stderr for everything else."""
    report = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return report


def watch_parent(stop: Callable[[], None]) -> None:
    """Stop the task if the process that started this worker goes away (a Ray worker killed, say)."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(_PARENT_POLL)
        stop()

    threading.Thread(target=watch, name="nami-batch-parent-watch", daemon=True).start()


def kill_leftovers() -> None:
    """Whatever this worker's tree still holds (a background process a tool left) ends with it."""
    for child in descendants(os.getpid()) or []:
        kill_tree(child)


def main() -> int:
    report = claim_stdout()
    return run_job(sys.stdin.read(), report)


def run_job(job_json: str, report: IO[str]) -> int:
    """Run one job (a :class:`Job` as JSON) in this process, reporting on ``report``: this worker's, or a
    worker forked from the warm server (batch/forked.py), which has its stdout moved off already."""
    keep_environment_private()
    adopt_orphans()
    job = Job.from_json(json.loads(job_json))

    def emit(record: dict[str, Any]) -> None:
        report.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        report.flush()

    run = TaskRun(job, Path.cwd(), on_started=lambda session: emit({"type": "started", "session": session}))
    signal.signal(signal.SIGTERM, lambda *_: run.stop())
    watch_parent(run.stop)
    result = run.execute()
    emit({"type": "result", "result": result})
    kill_leftovers()
    return 0


if __name__ == "__main__":
    code = main()
    sys.stderr.flush()
    # Not a normal exit: a tool thread stuck in Python code (nothing can stop it) would keep the
    # interpreter waiting for it; the result is out and the session closed, so nothing is lost.
    os._exit(code)
