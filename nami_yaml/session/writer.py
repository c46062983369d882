"""Writing a session as it happens: one JSON line per record, each written with one system call and
nothing buffered, so a crash or Ctrl-C loses at most the line being written.

Records (``type`` first on every line):
  session     the header: version, id, created, workspace, and the config it ran with
  message     a message appended to the history, exactly as sent (``index`` is its place in the list)
  replace     the history was replaced (``reason``: clear, compaction, repair) by ``messages``
  usage       one model request's tokens (``estimated`` when the server reported none) and cost
  compaction  what a compaction did (the history it replaced stays in the lines above)
  resume      the session was continued, with the config of that run and what loading repaired
  subagent    a sub-agent ran a task: its name, its own session (the one it recorded), how it ended
  final       a run ended: status, error, and the run's totals
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from nami_yaml.agent.events import Event
from nami_yaml.display import compact_json
from nami_yaml.session.store import SessionError

VERSION = 1


def now_iso() -> str:
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


def encode(record: dict[str, Any]) -> bytes:
    # Compact, and non-ASCII kept as is: a message's text is stored once, readable with grep.
    return (compact_json(record) + "\n").encode("utf-8")


class SessionWriter:
    """An event sink that appends a session file: it reads the events of the loop and of its accounting and
    compaction hooks, nothing else of the agent. A new session's file is created on its first record,
    so a chat left without a word leaves nothing behind. The file is locked while it is written: two
    processes continuing one session at once would interleave their histories."""

    def __init__(self, path: Path, session_id: str, *, header: dict[str, Any] | None = None,
                 messages: Iterable[dict[str, Any]] = ()):
        self.path = path
        self.id = session_id
        self._fd: int | None = None
        self._new = header is not None
        self._pending: list[bytes] = []
        if header is not None:
            self._pending.append(encode({"type": "session", "version": VERSION, "id": session_id, **header}))
        self._pending.extend(encode({"type": "message", "index": i, "message": m}) for i, m in enumerate(messages))

    @classmethod
    def reopen(cls, path: Path, session_id: str) -> SessionWriter:
        """Continue an existing file, locked now (so a session in use elsewhere is refused before anything
        runs or is read)."""
        writer = cls(path, session_id)
        writer._open()
        return writer

    def cut(self, keep_bytes: int) -> None:
        """Drop what follows the last complete line (a line half-written by a crash)."""
        assert self._fd is not None
        if os.fstat(self._fd).st_size > keep_bytes:
            os.ftruncate(self._fd, keep_bytes)

    # -- the sink ---------------------------------------------------------------------------------

    def __call__(self, event: Event) -> None:
        kind = event.type
        if kind == "history_append":
            self.write({"type": "message", "index": event.index, "message": event.message})  # type: ignore[union-attr]
        elif kind == "history_replace":
            self.write({"type": "replace", "reason": event.reason, "messages": event.messages})  # type: ignore[union-attr]
        elif kind in ("usage_counted", "compacted"):
            self.write(event.record)  # type: ignore[union-attr]
        elif kind == "subagent":
            self.write({"type": "subagent", "agent": event.agent, "session": event.session,  # type: ignore[union-attr]
                        "status": event.status})  # type: ignore[union-attr]
        elif kind == "final":
            self.write({"type": "final", "at": now_iso(), "status": event.status, "error": event.error,  # type: ignore[union-attr]
                        "totals": getattr(event, "totals", None)})

    def write(self, record: dict[str, Any]) -> None:
        if self._fd is None:
            self._open()
        assert self._fd is not None
        data = b"".join([*self._pending, encode(record)])
        self._pending.clear()
        _write_all(self._fd, data)

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)  # also releases the lock
            self._fd = None

    def __enter__(self) -> SessionWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the file ---------------------------------------------------------------------------------

    def _open(self) -> None:
        flags = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
        try:
            if self._new:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(self.path, flags | os.O_CREAT | os.O_EXCL, 0o600)
            else:
                fd = os.open(self.path, flags)
        except OSError as exc:
            raise SessionError(f"cannot write the session file {self.path}: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise SessionError(f"session {self.id} is in use by another nami process") from None
        self._fd = fd


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
