"""A SandboxPlan turned into bubblewrap's command line.

bwrap applies its mounts in order, so the order is the design: the system read-only, a fresh /dev and
/proc, an empty writable /tmp and empty /run; then every named path from the outermost to the innermost
(a path is mounted after the folders it is in, so the more specific wins); then the hidden folders made
read-only. A hidden folder is an empty tmpfs; a hidden file an empty read-only file (bwrap copies it from
a descriptor of /dev/null that the process layer passes down, :func:`wrap`). The home folder is such an
empty folder (the first mount of its depth), what is shown of it mounted inside; a denied program's file
is an empty read-only file too, mounted after everything else.
"""

from __future__ import annotations

import contextlib
import functools
import os
from pathlib import Path

from nami_yaml.runners.sandbox.plan import PRIVATE_FOLDERS, PRIVATE_TMP, SandboxPlan

_RO, _RW, _HIDE_DIR, _HIDE_FILE = "ro", "rw", "hide-dir", "hide-file"
# Same depth: hide before show, so a path both named and inside a hidden one is shown; read-only last.
_ORDER = {_HIDE_DIR: 0, _HIDE_FILE: 0, _RW: 1, _RO: 2}

def wrap(plan: SandboxPlan | None, argv: list[str], cwd: Path) -> tuple[list[str], tuple[int, ...]]:
    """The argv to start for ``argv`` under ``plan``, and the descriptors the child must inherit: opened
    for this start only, one per hidden file (bwrap closes each once it has copied it); the caller
    closes them once the child has started."""
    if plan is None or not plan.active:
        return argv, ()
    mounts = _mounts(plan)
    files = sum(1 for path, kind in mounts if kind == _HIDE_FILE)
    empty = [os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC) for _ in range(files)]
    return bwrap_argv(plan, argv, cwd, empty, mounts), tuple(empty)


def close_all(fds: tuple[int, ...]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def bwrap_argv(plan: SandboxPlan, argv: list[str], cwd: Path, empty: list[int],
               mounts: list[tuple[Path, str]] | None = None) -> list[str]:
    """``argv`` run in ``cwd`` inside the sandbox ``plan`` describes (``plan.active`` must be true);
    ``empty``: a descriptor of /dev/null for each hidden file; ``mounts``: the plan's, if already made."""
    out = list(plan.runner)
    if not plan.network:
        out.append("--unshare-net")
    out += ["--ro-bind", "/", "/", "--dev", "/dev"]
    out += ["--ro-bind", "/proc", "/proc"] if plan.host_proc else ["--proc", "/proc"]
    out += ["--tmpfs", str(PRIVATE_TMP)]
    for folder in _private_folders():
        out += ["--tmpfs", folder]
    hidden_dirs: list[Path] = []
    sources = iter(empty)
    for path, kind in _mounts(plan) if mounts is None else mounts:
        if kind == _HIDE_DIR:
            out += ["--tmpfs", str(path)]
            hidden_dirs.append(path)
        elif kind == _HIDE_FILE:
            out += ["--ro-bind-data", str(next(sources)), str(path)]
        elif kind == _RW:
            out += ["--bind", str(path), str(path)]
        else:
            out += ["--ro-bind", str(path), str(path)]
    for path in hidden_dirs:
        out += ["--remount-ro", str(path)]
    out += ["--chdir", str(cwd), "--", *argv]
    return out


@functools.cache
def _private_folders() -> tuple[str, ...]:
    """PRIVATE_FOLDERS that are folders here: /var/run is usually a link to /run. (Looked at once: they are
    the system's.)"""
    return tuple(str(folder) for folder in PRIVATE_FOLDERS if folder.is_dir() and not folder.is_symlink())


def _mounts(plan: SandboxPlan) -> list[tuple[Path, str]]:
    mounts: list[tuple[Path, str]] = [(p, _HIDE_DIR) for p in plan.empty]  # the home folder: an empty one
    mounts += [(p, _RO) for p in plan.visible]
    mounts.append((plan.workspace, _RO if plan.mode == "read-only" else _RW))
    mounts += [(p, _RW) for p in plan.writable]
    # Bound in place before what is mounted inside them (shallower first): mount points cannot be renamed.
    mounts += [(p, _RW) for p in plan.pinned if plan.mode != "read-only"]
    hidden = plan.hidden
    # A read is mounted where it would not be seen otherwise: inside something hidden, private or emptied.
    reads = [p for p in plan.reads if _covered(p, (*hidden, *plan.empty, PRIVATE_TMP, *PRIVATE_FOLDERS))]
    if plan.empty:
        # Inside the empty home only what a shown folder holds needs hiding: the rest is not there.
        shown = [p for p, _ in mounts if p not in plan.empty] + reads
        hidden = tuple(p for p in hidden if not _covered(p, plan.empty)
                       or any(_inside_strictly(p, folder) for folder in shown))
    mounts += [(p, _HIDE_DIR if p.is_dir() else _HIDE_FILE) for p in hidden]
    mounts += [(p, _RO) for p in reads]
    mounts += [(p, _RO) for p in plan.read_only]
    mounts += [(p, _RW) for p in plan.call_writes if os.path.lexists(p)]
    # A stable sort: equal depth keeps the order above for one kind, and _ORDER between kinds.
    ordered = sorted(mounts, key=lambda item: (len(item[0].parts), _ORDER[item[1]]))
    # Denied programs last, over whatever else shows them: nothing mounted after can bring one back.
    return ordered + [(p, _HIDE_FILE) for p in plan.masked]


def _covered(path: Path, folders: tuple[Path, ...]) -> bool:
    return any(path == folder or _inside_strictly(path, folder) for folder in folders)


def _inside_strictly(path: Path, folder: Path) -> bool:
    """``folder`` is one of ``path``'s parents (whole components; both normalized). By their text: asking
    ``path.parents`` made a list of paths for each question, most of the time of turning a plan into argv."""
    outer = str(folder)
    return str(path).startswith(outer if outer.endswith("/") else outer + "/") and path != folder
