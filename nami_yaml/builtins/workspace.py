"""The path boundary every built-in file tool goes through.

The workspace root is fixed in the RuntimeContext before the model says anything. A path from the model is
resolved the way the kernel would follow it (symlinks included) and then compared component by component
with the root, so ``/srv/app2`` is never mistaken for a child of ``/srv/app``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path, PurePath

from nami_yaml.errors import ToolError
from nami_yaml.runners.spill import spill_dir_is_ours
from nami_yaml.runtime import RuntimeContext


def is_within(path: PurePath | str, root: PurePath | str) -> bool:
    """True when ``path`` is ``root`` or below it, comparing whole components (both should be resolved)."""
    return PurePath(path).is_relative_to(PurePath(root))


def resolve_path(ctx: RuntimeContext, path: str, *, write: bool = False) -> Path:
    """Resolve a model-supplied path to a real absolute path inside the allowed roots, or raise ToolError.

    Reading is allowed under the workspace and under ``ctx.spill_dir`` (truncated output lives there and
    results point the model at it); writing only under the workspace. The returned path has every
    existing component resolved; components that do not exist yet are plain names (never ``..``), so
    creating them cannot leave the root. Nothing is created here.
    """
    if not isinstance(path, str) or path == "":
        raise ToolError("path is empty; give a path relative to the workspace root "
                        f"{ctx.workspace} (or an absolute path inside it)")
    if "\x00" in path:
        raise ToolError(f"path {path!r} contains a NUL byte")

    # "~" is deliberately not expanded: the home folder is not part of the workspace.
    candidate = Path(path)
    if not candidate.is_absolute():
        candidate = ctx.workspace / candidate

    existing, rest = _split_existing(candidate)
    if ".." in rest:
        raise ToolError(f"cannot resolve {path!r}: '..' follows a folder that does not exist "
                        f"({existing / rest[0]})")
    try:
        resolved = Path(os.path.realpath(existing)).joinpath(*rest)
    except OSError as exc:  # a link changing under realpath (readlink of what is now a folder)
        raise ToolError(f"cannot resolve {path!r}: {exc.strerror or exc} (is something changing it?)") from None

    roots = [ctx.workspace]
    if not write and spill_dir_is_ours(ctx.spill_dir):  # a symlink or a folder swapped in is never a root
        roots.append(Path(os.path.realpath(ctx.spill_dir)))
    if any(is_within(resolved, root) for root in roots):
        return resolved

    shown = f"{path!r}" if str(resolved) == path else f"{path!r} (resolves to {resolved})"
    if write:
        raise ToolError(f"{shown} is outside the workspace root {ctx.workspace}; "
                        "files can only be written inside the workspace")
    raise ToolError(f"{shown} is outside the workspace root {ctx.workspace}; only files inside the "
                    f"workspace (or nami's saved-output folder {ctx.spill_dir}) can be read")


# A folder reached without following links, and without needing read permission on the folders above
# (O_PATH); such a descriptor serves as dir_fd for creating, renaming and stat-ing names inside it.
_FOLDER_FLAGS = os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_PATH", os.O_RDONLY) | getattr(os, "O_CLOEXEC", 0)


def changed_error(shown: str, doing: str) -> ToolError:
    return ToolError(f"{shown} changed while it was being {doing}: a folder on its path was replaced by a link "
                     "(something else is changing the workspace); nothing was done, try again")


def open_folder(folder: Path, *, create: bool = False, shown: str, doing: str) -> int:
    """A descriptor of ``folder``, a path ``resolve_path`` returned, opened component by component from
    ``/`` without following any link, so it is the folder that was checked: between the check and the use
    another process could swap a folder on the way for a symlink (``renameat2`` exchange), which the
    plain path would follow out of the workspace. Missing folders are created when ``create``.
    """
    fd = os.open("/", _FOLDER_FLAGS)
    try:
        for name in folder.parts[1:]:
            try:
                inner = os.open(name, _FOLDER_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):  # made meanwhile: opened and checked below
                    os.mkdir(name, 0o777, dir_fd=fd)
                inner = os.open(name, _FOLDER_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = inner
    except NotADirectoryError:
        os.close(fd)
        raise changed_error(shown, doing) from None
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_regular_file(target: Path, *, shown: str, doing: str = "read") -> int:
    """A read-only descriptor of the regular file ``target`` (a path ``resolve_path`` returned), reached
    as ``open_folder`` does. Raises ToolError when it is not a regular file, OSError when missing."""
    folder = open_folder(target.parent, shown=shown, doing=doing)
    try:
        fd = os.open(target.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0),
                     dir_fd=folder)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # resolve_path resolved links: a link here was swapped in since
            raise changed_error(shown, doing) from None
        raise
    finally:
        os.close(folder)
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # O_NONBLOCK: a FIFO swapped in could not block the open
        os.close(fd)
        raise ToolError(f"{shown} is not a regular file")
    os.set_blocking(fd, True)
    return fd


def display_path(ctx: RuntimeContext, path: Path) -> str:
    """The shortest honest name for ``path`` in a result: relative to the workspace when inside it."""
    if is_within(path, ctx.workspace):
        rel = path.relative_to(ctx.workspace)
        return str(rel) if rel.parts else "."
    return str(path)


def _split_existing(path: Path) -> tuple[Path, list[str]]:
    """Split an absolute path into its longest existing prefix (as written) and the missing components.

    The prefix is left unresolved so ``..`` and symlinks in it are followed exactly as the kernel would;
    ``lexists`` keeps a dangling symlink in the prefix, so realpath then follows it to its target and the
    target, not the link, is what gets checked against the root.
    """
    parts = path.parts
    for cut in range(len(parts), 0, -1):
        prefix = Path(*parts[:cut])
        if os.path.lexists(prefix):
            return prefix, list(parts[cut:])
    return Path(parts[0]), list(parts[1:])
