"""The queue folder: one file per pending approval, written by the run that waits, and one file per
answer, written by the person who answers (``nami approvals approve|deny``).

Why files can be trusted here:

- The folder is nami's own (mode 0700, in its state folder) or a team's shared folder, which must have the
  sticky bit (chmod 1770 / 1777): nobody can then rename, replace or delete another user's file in it.
- Every file is created with O_EXCL and O_NOFOLLOW (never through a planted link, never over another file)
  and written whole before it gets its name (a reader never sees half a file).
- Who answered is the owner of the answer file, as the kernel says (fstat), never what the file claims: an
  answer claiming another user than its owner is refused. A signature (``NAMI_APPROVER_KEY``, signing.py)
  is checked by the run against the approvers' SSH public keys, a token (``NAMI_APPROVER_TOKEN``) against
  the hashes in ``approvals.approvers``, once it opened: a token is sealed for the run that asked
  (sealed_token.py), never in the clear in a file the folder's group reads. The answer file lives only until
  the run took it (the CLI deletes it once it has the run's receipt).
- The pending file carries the digest of the call (binding.py); an answer names the digest it approves,
  and the run counts it only when that is the digest of the call it holds, computed again.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import secrets
import socket
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nami_yaml.errors import ConfigError
from nami_yaml.xdg import default_state_dir

MAX_FILE_BYTES = 4_000_000
ID_PATTERN = re.compile(r"^[0-9a-f]{12}$")
PENDING, APPROVED, DENIED, WITHDRAWN, TIMED_OUT, REFUSED = "pending", "approved", "denied", "withdrawn", \
    "timed out", "refused"
KEEP_ANSWERED = 7 * 24 * 3600  # answered approvals are listed by `show` for a week, then removed by the next run


class ApprovalRefused(ConfigError):
    """An answer ``nami approvals`` cannot give: an unknown id, one answered already, one whose run has
    ended (withdrawn), a second answer by the same person, or one the run refused (exit 2)."""


def default_queue(env: Mapping[str, str] | None = None) -> Path:
    return default_state_dir(env) / "approvals"


def user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def iso_time(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def process_start(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot, from /proc), so a pid reused by another
    process is not taken for the run; None when there is no such process."""
    try:
        data = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    fields = data.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else None


def run_alive(run: Mapping[str, Any]) -> bool:
    """Whether the run that wrote a pending approval still waits (same host, same process)."""
    if run.get("host") != socket.gethostname():
        return True  # another machine's run: its own file says when it ends
    pid = run.get("pid")
    return isinstance(pid, int) and process_start(pid) == run.get("start")


@dataclass(frozen=True)
class Stored:
    """A file of the queue as read: its JSON and its owner (from fstat, not from the file)."""

    name: str
    data: dict[str, Any]
    owner: int


class QueueFolder:
    """One queue folder, checked when opened (see the module's docstring)."""

    def __init__(self, path: Path):
        self.path = path

    @classmethod
    def open(cls, setting: str | None, *, create: bool = True) -> QueueFolder:
        """The folder ``approvals.path`` names (None: nami's own), made (0700) when missing and ``create``.
        ConfigError when it cannot be used safely: not a folder, or writable by others without the sticky bit."""
        path = Path(setting) if setting else default_queue()
        if not create and not os.path.lexists(path):
            return cls(path)  # nothing was ever queued there: an empty queue
        if create and not path.exists():
            try:
                path.mkdir(mode=0o700, parents=True)
            except FileExistsError:
                pass
            except OSError as exc:
                raise ConfigError(f"cannot make the approvals folder {path}: {exc.strerror or exc}") from None
        try:
            info = path.stat()
        except OSError as exc:
            raise ConfigError(f"cannot use the approvals folder {path}: {exc.strerror or exc}") from None
        if not stat.S_ISDIR(info.st_mode):
            raise ConfigError(f"the approvals folder {path} is not a folder")
        shared = info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        if shared and not info.st_mode & stat.S_ISVTX:
            raise ConfigError(f"the approvals folder {path} is writable by others and has no sticky bit: anyone "
                              f"could replace a pending approval or an answer in it (chmod +t {path})")
        return cls(path)

    # -- reading -------------------------------------------------------------------------------------------

    def read(self, name: str) -> Stored | None:
        """A file of the folder, never through a link, never a special file; None when it is absent or not
        valid JSON (a file planted by someone is ignored, not trusted)."""
        try:
            fd = os.open(self.path / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
                return None
            with os.fdopen(os.dup(fd), "rb") as handle:
                raw = handle.read(MAX_FILE_BYTES + 1)
        except OSError:
            return None
        finally:
            os.close(fd)
        try:
            data = json.loads(raw)
        except ValueError:
            return None
        return Stored(name, data, info.st_uid) if isinstance(data, dict) else None

    def pending(self, approval_id: str) -> Stored | None:
        """A pending approval's file, when it is the run's own: owned by the user it names."""
        if not ID_PATTERN.match(approval_id):
            return None
        stored = self.read(f"{approval_id}.json")
        if stored is None or stored.data.get("id") != approval_id:
            return None
        run = stored.data.get("run") or {}
        return stored if run.get("uid") == stored.owner else None

    def listing(self) -> list[Stored]:
        found = []
        for name in self.names():
            if name.endswith(".json") and ID_PATTERN.match(name[:-5]):
                stored = self.pending(name[:-5])
                if stored is not None:
                    found.append(stored)
        return sorted(found, key=lambda s: s.data.get("created_unix") or 0)

    def names(self) -> list[str]:
        try:
            return sorted(os.listdir(self.path))
        except OSError:
            return []

    def answers(self, approval_id: str) -> list[str]:
        prefix = f"{approval_id}.answer."
        return [name for name in self.names() if name.startswith(prefix) and name.endswith(".json")]

    # -- writing -------------------------------------------------------------------------------------------

    def create(self, name: str, data: Mapping[str, Any], mode: int) -> None:
        """Write a new file whole, then give it its name (FileExistsError if it has one already)."""
        temporary = self.path / f".{name}.{secrets.token_hex(6)}.tmp"
        self._write(temporary, data, mode)
        try:
            os.link(temporary, self.path / name)  # never over an existing file, unlike a rename
        finally:
            with contextlib.suppress(OSError):
                os.unlink(temporary)

    def replace(self, name: str, data: Mapping[str, Any], mode: int = 0o644) -> None:
        """Replace one of the run's own files whole (a pending approval's new state)."""
        temporary = self.path / f".{name}.{secrets.token_hex(6)}.tmp"
        self._write(temporary, data, mode)
        try:
            os.replace(temporary, self.path / name)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise

    @staticmethod
    def _write(path: Path, data: Mapping[str, Any], mode: int) -> None:
        payload = (json.dumps(data, ensure_ascii=True, indent=1, default=str) + "\n").encode()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
        try:
            os.fchmod(fd, mode)  # whatever the umask: readers in a team folder need to read it
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(path)
            raise
        os.close(fd)

    def remove(self, name: str) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self.path / name)

    def prune(self, now: float) -> None:
        """Remove this user's approvals answered more than a week ago, and receipts left an hour (the
        answer's writer removes its receipt; one of another user cannot, in a sticky folder)."""
        for name in self.names():
            if not name.endswith(".json"):
                continue
            try:
                info = os.lstat(self.path / name)
            except OSError:
                continue
            if info.st_uid != os.getuid() or not stat.S_ISREG(info.st_mode):
                continue
            if ".receipt." in name:
                if now - info.st_mtime > 3600:
                    self.remove(name)
                continue
            stored = self.read(name)
            if stored is not None and stored.data.get("state") != PENDING and now - info.st_mtime > KEEP_ANSWERED:
                self.remove(name)


def new_id() -> str:
    return secrets.token_hex(6)
