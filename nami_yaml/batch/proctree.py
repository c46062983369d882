"""A task's whole process tree: the worker and everything it started, tool processes included.

Tools run in sessions of their own (so a timeout can kill a tool's group without touching nami), which
puts them out of reach of a kill aimed at the worker's process group. The tree is followed by parent
links instead; each process is stopped before it is killed, so nothing in the tree can fork a new child
between the walk and the kill. A worker also adopts the orphans of its tree (a child subreaper), so a
daemonizing tool stays in its tree instead of escaping to init.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections import defaultdict

from nami_yaml.procfs import processes

_PR_SET_CHILD_SUBREAPER = 36
_MAX_ROUNDS = 50


def adopt_orphans() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux); False where that is not possible."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _children() -> dict[int, list[int]] | None:
    """Parent pid -> live child pids (None where there is no /proc)."""
    listed = processes()
    if listed is None:
        return None
    children: dict[int, list[int]] = defaultdict(list)
    for process in listed:
        if process.alive:
            children[process.ppid].append(process.pid)
    return children


def descendants(pid: int) -> list[int] | None:
    """Every live process below ``pid`` (None where the tree cannot be read)."""
    children = _children()
    if children is None:
        return None
    found: list[int] = []
    stack = list(children.get(pid, []))
    while stack:
        child = stack.pop()
        found.append(child)
        stack.extend(children.get(child, []))
    return found


def kill_tree(pid: int, *, include_root: bool = True) -> None:
    """SIGKILL ``pid`` (unless not ``include_root``) and all its descendants, each stopped first."""
    stopped: list[int] = []
    seen: set[int] = set()
    for _ in range(_MAX_ROUNDS):
        below = descendants(pid)
        if below is None:  # no /proc: the worker's own group is the best there is
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
            break
        new = [p for p in ([pid] if include_root else []) + below if p not in seen]
        if not new:
            break
        for process in new:
            seen.add(process)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(process, signal.SIGSTOP)
                stopped.append(process)
    for process in stopped:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(process, signal.SIGKILL)
