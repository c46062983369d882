"""The files of the programs a rule denies by name alone (``command: [rm]``), masked in the sandbox of the
calls that rule can match: each becomes an empty read-only file there (bwrap.py), so nothing runs the
program, whatever spells it (``$(printf rm)``, a script file, ``python3 -c "os.system('r'+'m …')"``, an
alias), and copying it copies nothing.

Which files are the program: the entry of that name in every folder of the PATH and in the system's
program folders (a call may set its own PATH), each at its real path (links followed: ``/bin/rm`` on a
merged /usr is ``/usr/bin/rm``, a link in ~/.local/bin is what it points to), and every hard link to that
file in those folders.

A multi-call binary (busybox, toybox, coreutils built as one program) is not masked where the program is
one of its names: masking the file would take every program it provides (``sh`` among them, on Alpine).
It is known by the number of names in the program folders that lead to it (:data:`MULTI_CALL_NAMES`);
a deny of such a program is line reading only, as docs/permissions.md says. Denying the multi-call binary
itself by its own name (``busybox``) masks it. The shell a call is started with (bash, for the bash
built-in) is never masked in that call: the call is that program.
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Iterable
from pathlib import Path

# Where programs are installed whatever the PATH says (a call may set its own PATH).
SYSTEM_FOLDERS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
# A file that this many names of the program folders lead to (links, hard links) is a multi-call binary;
# a program and its versions (python3 -> python3.12, python) stay well under it.
MULTI_CALL_NAMES = 6


def masked_files(names: Iterable[str], path: str, shell: str | None = None) -> tuple[Path, ...]:
    """The files to mask for the programs ``names`` (their last path part counts: ``/bin/rm`` is ``rm``),
    looked for in ``path``'s folders and the system's; never ``shell``'s. Cached per PATH: the programs
    installed do not change within a session."""
    return _masked(tuple(sorted({os.path.basename(n) for n in names if os.path.basename(n)})), path, shell or "")


@functools.lru_cache(maxsize=16)
def _masked(names: tuple[str, ...], path: str, shell: str) -> tuple[Path, ...]:
    folders = _folders(path)
    running = os.path.realpath(shell) if shell else ""
    found: list[Path] = []
    for name in names:
        for folder in folders:
            candidate = os.path.join(folder, name)
            real = os.path.realpath(candidate)
            try:
                info = os.stat(real)
            except OSError:
                continue
            if not stat.S_ISREG(info.st_mode) or real == running:
                continue
            if os.path.basename(real) != name and _names_of(real, info, folders) >= MULTI_CALL_NAMES:
                continue  # busybox, toybox: masking the file would take every program it provides
            found.append(Path(real))
            if info.st_nlink > 1:
                found += _hard_links(info, folders)
    return tuple(dict.fromkeys(found))


def _folders(path: str) -> tuple[str, ...]:
    listed = [p for p in path.split(os.pathsep) if os.path.isabs(p)]
    real = (os.path.realpath(p) for p in (*listed, *SYSTEM_FOLDERS))
    return tuple(dict.fromkeys(p for p in real if os.path.isdir(p)))


def _names_of(real: str, info: os.stat_result, folders: tuple[str, ...]) -> int:
    """How many entries of ``folders`` lead to the file ``real`` (by a link, or as a hard link)."""
    return sum(1 for entry in _entries(folders) if _same(entry, real, info))


def _hard_links(info: os.stat_result, folders: tuple[str, ...]) -> list[Path]:
    found = []
    for entry in _entries(folders):
        try:
            other = os.stat(entry, follow_symlinks=False)
        except OSError:
            continue
        if (other.st_dev, other.st_ino) == (info.st_dev, info.st_ino):
            found.append(Path(entry))
    return found


def _same(entry: str, real: str, info: os.stat_result) -> bool:
    if os.path.islink(entry):
        return os.path.realpath(entry) == real
    if info.st_nlink == 1:
        return entry == real
    try:
        other = os.stat(entry)
    except OSError:
        return False
    return (other.st_dev, other.st_ino) == (info.st_dev, info.st_ino)


@functools.lru_cache(maxsize=16)
def _entries(folders: tuple[str, ...]) -> tuple[str, ...]:
    found: list[str] = []
    for folder in folders:
        try:
            found += [entry.path for entry in os.scandir(folder)]
        except OSError:
            continue
    return tuple(found)


@functools.lru_cache(maxsize=16)
def running_shell(path: str) -> str | None:
    """The bash the bash built-in starts (found as it finds it, on the host's PATH); once per PATH."""
    import shutil

    return shutil.which("bash", path=path) or shutil.which("bash")
