"""The processes of this machine as /proc shows them (Linux): enough to follow a process tree or a group."""

from __future__ import annotations

import os
from dataclasses import dataclass


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
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue  # it ended meanwhile
        # The command name may contain spaces and parentheses; the fields after the last ")" do not.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2:
            found.append(ProcessInfo(int(entry), fields[0].decode("ascii", "replace"), int(fields[1]),
                                     int(fields[2])))
    return found
