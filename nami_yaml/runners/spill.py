"""The folders where tool output too long for the model is saved, one per session, and the checks that keep
them nami's own: the path is told to the model and read by the read tools, so a symlink or another folder
put in its place must never be followed."""

from __future__ import annotations

import atexit
import contextlib
import os
import secrets
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from nami_yaml.xdg import default_state_dir

# The saved-output folders this process made (or first found as real folders of its own): path -> (device,
# inode). The path is told to the model, so everything that later opens the folder checks it is still the
# same folder, never a symlink or another folder put in its place.
_SPILL_FOLDERS: dict[str, tuple[int, int]] = {}
_SPILL_LOCK = threading.Lock()


def _own_folder(info: os.stat_result) -> bool:
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()


def claim_spill_dir(path: Path, *, create: bool = True) -> bool:
    """Make ``path`` this process's saved-output folder: create it (0o700) if it is missing and ``create``,
    or accept it if it is already a real folder of this user (never a symlink). Returns whether it is
    ours, i.e. the folder nami remembers, unchanged."""
    key = os.path.abspath(path)
    with _SPILL_LOCK:
        known = _SPILL_FOLDERS.get(key)
        try:
            info = os.lstat(key)
        except FileNotFoundError:
            if known is not None or not create:
                return False  # ours was removed or moved: whatever appears there later is not ours
            try:
                os.makedirs(os.path.dirname(key), exist_ok=True)
                os.mkdir(key, 0o700)  # exclusive: fails if something was planted meanwhile
                info = os.lstat(key)
            except OSError:
                return False
        except OSError:
            return False
        if not _own_folder(info):
            return False
        identity = (info.st_dev, info.st_ino)
        if known is None:
            _SPILL_FOLDERS[key] = identity
            return True
        return known == identity


def spill_dir_is_ours(path: Path) -> bool:
    """Whether ``path`` is still the saved-output folder nami made (or found), never creating it."""
    return claim_spill_dir(path, create=False)


def open_spill_dir(path: Path) -> int:
    """A descriptor of the saved-output folder, checked to be the one nami made (raises OSError)."""
    if not claim_spill_dir(path):
        raise OSError(f"{path} is not nami's saved-output folder")
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    info = os.fstat(fd)
    if _SPILL_FOLDERS.get(os.path.abspath(path)) != (info.st_dev, info.st_ino):
        os.close(fd)
        raise OSError(f"{path} was replaced")
    return fd


def session_spill_dir(base: Path | None = None, *, keep_days: float = 7.0, name: str | None = None,
                      keep: Callable[[str], bool] | None = None) -> Path:
    """A folder for this session's saved tool output, created now (0o700, exclusively) or, for a recorded
    session continued (``name``: its id), taken up again if it is still a real folder of this user.

    Per session, because the read tools may read it: one project's saved output must not be readable
    from another project's session. Created at once, because its path is told to the model: created on
    first use, a symlink planted there first would have made whatever it points to readable. A recorded
    session's folder is named by its id, so a continued session can still read the paths its earlier
    results named. Folders older than ``keep_days`` are removed, except those of sessions still kept
    (``keep(id)`` is true). If the shared folder is not a real folder owned by this user (a symlink
    planted by a command, say), a private folder in the system's temporary directory is used.
    """
    base = base or default_state_dir() / "output"
    try:
        base.mkdir(parents=True, exist_ok=True)
        usable = _own_folder(os.lstat(base))
    except OSError:
        usable = False
    if usable:
        os.chmod(base, 0o700)
        cutoff = time.time() - keep_days * 86400
        for old in base.iterdir():
            with contextlib.suppress(OSError):
                entry = os.lstat(old)
                if (stat.S_ISDIR(entry.st_mode) and old.name.startswith("session-") and entry.st_mtime < cutoff
                        and not (keep is not None and keep(old.name.removeprefix("session-")))):
                    shutil.rmtree(old, ignore_errors=True)
        if name is not None:
            named = base / f"session-{name}"
            if claim_spill_dir(named):
                return _removed_at_exit_if_empty(named)
        else:
            for _ in range(5):
                folder = base / f"session-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{secrets.token_hex(3)}"
                if not os.path.lexists(folder) and claim_spill_dir(folder):
                    return _removed_at_exit_if_empty(folder)
    folder = Path(tempfile.mkdtemp(prefix="nami-output-"))
    claim_spill_dir(folder)
    return _removed_at_exit_if_empty(folder)


def _removed_at_exit_if_empty(folder: Path) -> Path:
    """Most commands (`nami check`, `nami tools list`, a run whose output was never cut) save nothing:
    their folder goes when the process ends instead of piling up for a week. rmdir removes only an empty
    folder, so nothing saved is lost."""
    atexit.register(_remove_if_empty, str(folder))
    return folder


def _remove_if_empty(folder: str) -> None:
    with contextlib.suppress(OSError):
        os.rmdir(folder)


def read_saved_output(path: Path, limit: int, base: Path | None = None) -> str | None:
    """The text of a saved-output file named by a recorded result (a replay serves the whole output), or
    None. Only a regular file of this user, directly inside a session folder of nami's own output folder
    (``base``, default the state folder's), opened without following a link and no larger than ``limit``
    bytes: a session file may come from someone else, and must not make nami read another file of yours."""
    base = base or default_state_dir() / "output"
    try:
        folder = path.parent
        if (not path.is_absolute() or folder.parent != base or not folder.name.startswith("session-")
                or not _own_folder(os.lstat(folder)) or not _own_folder(os.lstat(base))):
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_size > limit:
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(limit + 1).decode("utf-8", errors="replace")
    except OSError:
        return None
    finally:
        os.close(fd)
