"""The processes of this machine as /proc shows them (Linux): enough to follow a process tree or a group."""

from __future__ import annotations

import os
from dataclasses import dataclass

_STAT_MAX = 4096  # /proc/PID/stat: 52 numbers and a name of at most 64 bytes, well under a page


@dataclass(frozen=True)
class ProcessInfo:
    pid: int
    state: str  # R, S, D, T, Z (zombie), X (dead)…
    ppid: int
    pgid: int

    @property
    def alive(self) -> bool:
        """Still running (or stopped): not a zombie waiting to be reaped."""
        return self.state not in ("Z", "X")


def processes() -> list[ProcessInfo] | None:
    """Every process, or None where there is no /proc to read."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    found = []
    for entry in entries:
        if not entry.isdigit():
            continue
        # os.open and one read: a file object (fstat, isatty, buffered reads to EOF) cost ten times as
        # much, and a finished tool call reads every process's stat once (is its group empty?).
        try:
            fd = os.open(f"/proc/{entry}/stat", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue  # it ended meanwhile
        try:
            stat = os.read(fd, _STAT_MAX)
        except OSError:
            continue
        finally:
            os.close(fd)
        # The command name may contain spaces and parentheses; the fields after the last ")" do not.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2:
            found.append(ProcessInfo(int(entry), fields[0].decode("ascii", "replace"), int(fields[1]),
                                     int(fields[2])))
    return found
