"""Processes found by what they run: a sandboxed process's pid is one of its own pid namespace, so tests
look for its command line on the host. (need_bwrap, for tests of the real bwrap, is in tests/programs.py.)"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

from tests.programs import need_bwrap

__all__ = ["gone", "kill", "need_bwrap", "running"]


def running(marker: str) -> list[int]:
    """The live (not zombie) processes of this machine whose command line holds ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker in cmdline and state not in ("Z", "X"):
            found.append(int(entry))
    return found


def gone(marker: str, within: float = 5.0) -> bool:
    """Whether no process holding ``marker`` is left, waiting up to ``within`` seconds for the kernel to
    finish killing them (a wait for a state, not a measure of time)."""
    deadline = time.monotonic() + within
    while running(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not running(marker)


def kill(pids: list[int]) -> None:
    """SIGKILL these processes (a test's leftovers), those that ended meanwhile (dying with their sandbox)
    as well: found a moment ago is not still there."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
