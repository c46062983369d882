"""Where sessions live, how they are named, and finding one: by id, by a prefix of it, or the latest of a
workspace. One JSONL file per session in ``$XDG_DATA_HOME/nami/sessions/`` (private to the user: session
files hold tool output, which may include whatever a command printed)."""

from __future__ import annotations

import json
import os
import re
import secrets
import stat
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from nami_yaml.errors import ConfigError, NamiError
from nami_yaml.xdg import user_data_dir

SUFFIX = ".jsonl"
ID_PATTERN = re.compile(r"^\d{8}-\d{6}-[0-9a-f]{6}$")


class SessionError(NamiError):
    """A session file that cannot be used: unreadable, corrupt, written by a newer nami, or in use."""


class SessionRefused(ConfigError):
    """A session that is not there, or does not belong here (another workspace, another tool set)."""


def default_sessions_dir(env: Mapping[str, str] | None = None) -> Path:
    return user_data_dir(env) / "sessions"


def new_session_id(now: float | None = None) -> str:
    """Sortable by time, readable, and unique enough to never collide on one machine."""
    return f"{time.strftime('%Y%m%d-%H%M%S', time.localtime(now))}-{secrets.token_hex(3)}"


def read_header(path: Path) -> dict[str, Any] | None:
    """The first line of a session file, or None if it is not a session header."""
    try:
        with open(path, "rb") as file:
            first = file.readline(1_000_000)
        header = json.loads(first)
    except (OSError, ValueError):
        return None
    return header if isinstance(header, dict) and header.get("type") == "session" else None


class SessionStore:
    """The folder of session files. Nothing is created until a session is written."""

    def __init__(self, folder: Path | None = None):
        self.folder = Path(folder) if folder is not None else default_sessions_dir()

    def path(self, session_id: str) -> Path:
        if not ID_PATTERN.match(session_id):
            raise SessionRefused(f"{session_id!r} is not a session id (like 20250101-120000-abc123)")
        return self.folder / f"{session_id}{SUFFIX}"

    def prepare(self) -> Path:
        """The folder, created private to this user if needed; refused if it is not a real folder of ours."""
        self.folder.mkdir(parents=True, exist_ok=True)
        info = os.lstat(self.folder)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            raise SessionError(f"{self.folder} is not a folder owned by you; sessions cannot be saved there")
        if stat.S_IMODE(info.st_mode) != 0o700:
            os.chmod(self.folder, 0o700)
        return self.folder

    def has(self, session_id: str) -> bool:
        return bool(ID_PATTERN.match(session_id)) and (self.folder / f"{session_id}{SUFFIX}").is_file()

    def ids(self) -> list[str]:
        """Every session id, oldest first."""
        try:
            names = os.listdir(self.folder)
        except OSError:
            return []
        return sorted(n[: -len(SUFFIX)] for n in names if n.endswith(SUFFIX) and ID_PATTERN.match(n[: -len(SUFFIX)]))

    def find(self, ref: str) -> Path:
        """A session by its id or a unique start of it."""
        ref = ref.strip()
        matches = [i for i in self.ids() if i.startswith(ref)] if ref else []
        if ref in matches:
            return self.path(ref)
        if len(matches) == 1:
            return self.path(matches[0])
        if not matches:
            raise SessionRefused(f"no session {ref!r} in {self.folder} (`nami sessions` lists them)")
        shown = ", ".join(matches[:5]) + (", …" if len(matches) > 5 else "")
        raise SessionRefused(f"{ref!r} matches {len(matches)} sessions ({shown}); give more of the id")

    def by_recent_use(self) -> Iterator[tuple[Path, dict[str, Any]]]:
        """Session files with their headers, the most recently written first."""
        entries = []
        for session_id in self.ids():
            path = self.folder / f"{session_id}{SUFFIX}"
            try:
                entries.append((path.stat().st_mtime, session_id, path))
            except OSError:
                continue
        for _, _, path in sorted(entries, reverse=True):
            header = read_header(path)
            if header is not None:
                yield path, header

    def latest(self, workspace: Path) -> Path:
        """The session most recently written in ``workspace``."""
        wanted = str(Path(workspace).resolve())
        for path, header in self.by_recent_use():
            # A sub-agent's session is continued through its parent's, never on its own.
            if header.get("workspace") == wanted and not header.get("parent"):
                return path
        raise SessionRefused(f"no earlier session in {wanted} to continue (`nami sessions` lists them all)")
