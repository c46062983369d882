"""A task's session file and audit lines, brought back from another machine with its result, so that the
machine that ran ``nami batch`` keeps a record of every task (``nami sessions show ID``, ``nami log``)."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

from nami_yaml.policy.audit import append_records, writable_problem
from nami_yaml.session.store import ID_PATTERN, SessionStore

RECORDS_KEY = "_records"  # in a worker's result, removed before the result is written


def collect(session_id: str, session_path: Path, audit_path: Path) -> dict[str, Any]:
    """What the worker's machine recorded for ``session_id``."""
    try:
        session = session_path.read_text(encoding="utf-8")
    except OSError:
        session = None
    lines: list[str] = []
    try:
        with audit_path.open(encoding="utf-8", errors="surrogateescape") as handle:
            for line in handle:
                if session_id in line and _session_of(line) == session_id:
                    lines.append(line if line.endswith("\n") else line + "\n")
    except OSError:
        pass
    return {"host": socket.gethostname(), "session_id": session_id, "session": session, "audit": lines}


def _session_of(line: str) -> str | None:
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    return entry.get("session") if isinstance(entry, dict) else None


def _record_of(line: Any) -> dict[str, Any] | None:
    try:
        entry = json.loads(line) if isinstance(line, str) else None
    except ValueError:
        return None
    return entry if isinstance(entry, dict) else None


def records_problem(records: Any) -> str | None:
    """Why ``records`` brought back from another machine cannot be kept here (None: they can)."""
    if not isinstance(records, dict):
        return f"a {type(records).__name__}, not records"
    session_id = records.get("session_id")
    if not (isinstance(session_id, str) and ID_PATTERN.match(session_id)):
        return f"{str(session_id)[:80]!r} is not a session id"
    if not isinstance(records.get("session"), (str, type(None))) or not isinstance(records.get("host"), str):
        return "its session or host is not text"
    audit = records.get("audit")
    if not isinstance(audit, list) or not all(isinstance(line, str) for line in audit):
        return "its audit lines are not a list of text"
    return None


def store(records: dict[str, Any], *, audit_path: Path, sessions: SessionStore | None = None) -> bool:
    """Keep records made on another machine here; records made on this machine are already here.
    True when something was written."""
    if records.get("host") == socket.gethostname():
        return False
    sessions = sessions or SessionStore()
    session_id, text = records.get("session_id"), records.get("session")
    wrote = False
    if isinstance(session_id, str) and isinstance(text, str) and not sessions.has(session_id):
        sessions.prepare()
        path = sessions.path(session_id)
        temporary = path.with_suffix(".part")
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)
        wrote = True
    entries = [entry for entry in map(_record_of, records.get("audit") or []) if entry is not None]
    if entries and writable_problem(audit_path) is None:
        append_records(audit_path, entries)  # chained into this machine's log
        wrote = True
    return wrote
