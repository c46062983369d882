"""Where a tool's program is, remembered as a shell remembers it (bash's ``hash``), so a call does not search
the PATH again.

Started by name, a program is looked for in every folder of the child's PATH in turn, and each folder that
does not have it costs a failed ``execve`` in the child, with the parent waiting: on a PATH of a dozen
folders some 30 µs a call (bench/: per step). The folder it was found in is remembered per name and PATH,
and used until starting from there fails (the file was moved, removed or replaced by one that cannot run);
then the PATH is searched again, as bash does with its table. Only a PATH of absolute folders is
remembered: a relative one names a different folder for each working directory.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Mapping

_MAX_REMEMBERED = 256
_found: dict[tuple[str, str], str | None] = {}  # (name, PATH) -> the file; None: search the PATH every time
_lock = threading.Lock()


def located(program: str, env: Mapping[str, str]) -> str | None:
    """The file ``program`` names on ``env``'s PATH, remembered; None where the PATH must be searched (a
    path rather than a name, a relative folder on the PATH, nothing found, or starting it failed before)."""
    if os.sep in program or not program:
        return None
    path = env.get("PATH", os.defpath)
    key = (program, path)
    try:
        return _found[key]
    except KeyError:
        pass
    folders = path.split(os.pathsep)
    found = shutil.which(program, path=path) if all(os.path.isabs(f) for f in folders) else None
    with _lock:
        if len(_found) >= _MAX_REMEMBERED:
            _found.clear()
        _found[key] = found
    return found


def forget(program: str, env: Mapping[str, str]) -> None:
    """Starting the remembered file failed: from now on this name is searched for on this PATH each time."""
    with _lock:
        _found[(program, env.get("PATH", os.defpath))] = None
