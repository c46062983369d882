"""Plans kept while what they were made from is unchanged: a call of the same tool, with the same settings,
environment and inputs, gets the plan made for the call before, as long as no folder whose entries the
making of that plan looked at has changed since.

Making a plan looks at some fifty paths (the credential files that exist, nami's folders, the workspace's
git files, the real path of each named path): a third of a millisecond at every call, for an answer that
stays the same until a file appears, goes, or is replaced. Whether a path exists, what it is, and where
its links lead are all read from the entries of the folders along it (links followed), and any change of
an entry (made, removed, renamed, replaced by a link, its folder's permissions changed) changes that
folder's ctime, which no program can set back. So while a plan is made, every folder it reads an entry
of is noted (:func:`look`, :func:`look_into`), and the plan is used again only while each of those folders
has the same device, inode, ctime and mtime.

Timestamps are coarse (a clock tick, a second or two on some filesystems): a change in the same tick as
the plan's making could leave a folder's ctime as it was read. A plan is therefore kept only when none of
its folders changed in the :data:`RACY` seconds before it was made (as git does with files changed in the
second of its index): such a plan serves that one call, and the next call makes its own.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import TypeVar

RACY = 2.0  # seconds: FAT keeps times to 2 s; a kernel's coarse clock lags by a tick
_LINKS = 40  # links followed in one lookup, as the kernel's own limit
_SIZE = 64  # plans kept (a session has a few dozen kinds of call at most)

Plan = TypeVar("Plan")
State = tuple[int, int, int, int] | None


class _Looked(threading.local):
    folders: set[str] | None = None
    # Within one making: each path as written, resolved (None: missing), so that the fifty paths under the
    # home folder cost one lookup of their last part each, not one of every part.
    resolved: dict[str, str | None] = {}


_looked = _Looked()


def look(path: os.PathLike[str] | str) -> None:
    """While a plan is made: note the folders whose entries looking ``path`` up reads, links followed."""
    folders = _looked.folders
    if folders is None:
        return
    text = os.fspath(path)
    if text not in _looked.resolved:  # (looked at already in this making: a lexists, then its realpath)
        _resolve(text if text.startswith("/") else os.path.abspath(text), folders, _looked.resolved, 0)


def look_into(folder: os.PathLike[str] | str) -> None:
    """While a plan is made: ``folder``'s entries are listed (its ctime changes with any of them)."""
    folders = _looked.folders
    if folders is not None:
        look(folder)
        folders.add(os.path.abspath(os.fspath(folder)))


def _resolve(path: str, folders: set[str], resolved: dict[str, str | None], links: int) -> str | None:
    """``path`` resolved as the kernel does, noting each folder an entry is read from; None where a part
    is missing or unreadable (its folder is noted: a change there is what would make it appear)."""
    current, written = "/", ""
    for name in path.split("/"):
        if name in ("", "."):
            continue
        written += "/" + name
        known = resolved.get(written, "")
        if known != "":
            if known is None:
                return None
            current = known
            continue
        current = _step(current, name, folders, resolved, links)  # type: ignore[assignment]
        resolved[written] = current
        if current is None:
            return None
    return current


def _step(current: str, name: str, folders: set[str], resolved: dict[str, str | None], links: int) -> str | None:
    """The folder ``current`` (resolved) and then its entry ``name``, resolved."""
    if name == "..":
        return os.path.dirname(current)
    folders.add(current)
    candidate = os.path.join(current, name)
    try:
        info = os.lstat(candidate)
    except OSError:
        return None
    if not stat.S_ISLNK(info.st_mode):
        return candidate
    if links >= _LINKS:
        return None
    try:
        target = os.readlink(candidate)
    except OSError:
        return None
    return _resolve(os.path.join(current, target), folders, resolved, links + 1)


def _state(folder: str) -> State:
    try:
        info = os.lstat(folder)
    except OSError:
        return None
    return info.st_dev, info.st_ino, info.st_ctime_ns, info.st_mtime_ns


class PlanCache:
    """Plans by their inputs, each with the state of the folders its making looked at."""

    def __init__(self, size: int = _SIZE) -> None:
        self._size = size
        self._plans: dict[Hashable, tuple[object, tuple[tuple[str, State], ...]]] = {}
        self._lock = threading.Lock()

    def plan(self, key: Hashable, make: Callable[[], Plan]) -> Plan:
        """The plan kept for ``key`` if every folder it looked at is as it was, else ``make()``'s, kept
        when none of those folders changed just before (see :data:`RACY`)."""
        kept = self._plans.get(key)
        if kept is not None and all(_state(folder) == state for folder, state in kept[1]):
            return kept[0]  # type: ignore[return-value]
        started = time.time_ns()
        with _looking() as folders:
            made = make()
        states = tuple((folder, _state(folder)) for folder in sorted(folders))
        recent = started - int(RACY * 1e9)
        if all(state is None or state[2] < recent for _, state in states):
            with self._lock:
                self._plans.pop(key, None)
                if len(self._plans) >= self._size:
                    self._plans.pop(next(iter(self._plans)))
                self._plans[key] = (made, states)
        return made

    def clear(self) -> None:
        with self._lock:
            self._plans.clear()


@contextmanager
def _looking() -> Iterator[set[str]]:
    outer, outer_resolved = _looked.folders, _looked.resolved
    folders: set[str] = set()
    _looked.folders, _looked.resolved = folders, {}
    try:
        yield folders
    finally:
        _looked.folders, _looked.resolved = outer, outer_resolved
        if outer is not None:
            outer |= folders
