"""Time spent waiting for a person to answer from the queue. A batch task's ``wall_time`` does not count
it: the task's own deadline moves by it (batch/task_run.py), and the batch process that would kill a
worker past its wall time reads it from the file named by $NAMI_APPROVAL_WAIT_FILE (batch/isolate.py)."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

WAIT_FILE_ENV = "NAMI_APPROVAL_WAIT_FILE"


class WaitClock:
    """Seconds waited, the wait under way included. One per process (a batch worker runs one task)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._total = 0.0
        self._since: float | None = None
        self._depth = 0

    @contextlib.contextmanager
    def waiting(self) -> Iterator[None]:
        with self._lock:
            self._depth += 1
            if self._depth == 1:
                self._since = time.monotonic()
        self._report()
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0 and self._since is not None:
                    self._total += time.monotonic() - self._since
                    self._since = None
            self._report()

    def waited(self) -> float:
        with self._lock:
            return self._total + (time.monotonic() - self._since if self._since is not None else 0.0)

    def _report(self) -> None:
        path = os.environ.get(WAIT_FILE_ENV)
        if not path:
            return
        with self._lock:
            state = {"total": self._total, "since": time.time() - (time.monotonic() - self._since)
                     if self._since is not None else None}
        with contextlib.suppress(OSError):
            temporary = f"{path}.{os.getpid()}.tmp"
            Path(temporary).write_text(json.dumps(state), encoding="utf-8")
            os.replace(temporary, path)


def waited_in(path: Path) -> float:
    """The seconds a worker reported waiting in ``path`` (0 when it reported nothing)."""
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
        total = float(state.get("total") or 0.0)
        since = state.get("since")
        return total + (max(0.0, time.time() - float(since)) if since is not None else 0.0)
    except (OSError, ValueError, TypeError, AttributeError):
        return 0.0


WAITS = WaitClock()
