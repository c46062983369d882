"""Reading a session file back: upgrade older versions, rebuild the history exactly as it was last sent,
and repair what an interruption left, so the next request is one a strict provider accepts."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nami_yaml.session.store import SessionError
from nami_yaml.session.usage import StepUsage, Totals
from nami_yaml.session.writer import VERSION

Record = dict[str, Any]

INTERRUPTED_RESULT = ("Error: Interrupted: nami stopped before this call returned a result, so its outcome is "
                      "unknown. Check before repeating it.")

# version -> a function turning one record of that version into the next version's records. A file is
# upgraded step by step, line by line, when read; it is never rewritten.
UPGRADES: dict[int, Callable[[Record], list[Record]]] = {}


@dataclass
class LoadedSession:
    path: Path
    header: Record
    messages: list[dict[str, Any]]  # the history as the next request will send it (repaired)
    records: list[Record]  # every record after the header, upgraded
    repairs: list[str] = field(default_factory=list)  # what loading fixed, for the user and the file
    good_bytes: int = 0  # the file's length up to its last complete line
    repaired: bool = False  # the messages differ from the file's: the repair must be recorded

    @property
    def id(self) -> str:
        return str(self.header.get("id", self.path.stem))

    @property
    def config(self) -> Record:
        """The config of the latest run (a continued session records each run's)."""
        config = dict(self.header.get("config") or {})
        for record in self.records:
            if record.get("type") == "resume" and isinstance(record.get("config"), dict):
                config = record["config"]
        return config

    @property
    def steps(self) -> list[StepUsage]:
        return [StepUsage.from_record(r) for r in self.records if r.get("type") == "usage"]

    @property
    def totals(self) -> Totals:
        totals = Totals()
        for step in self.steps:
            totals.add(step)
        return totals

    @property
    def first_task(self) -> str | None:
        for record in self.records:
            message = record.get("message") if record.get("type") == "message" else None
            if isinstance(message, dict) and message.get("role") == "user" and isinstance(message.get("content"), str):
                return message["content"]
        return None


def read_records(path: Path) -> tuple[Record, list[Record], int, list[str]]:
    """The header, the upgraded records, the length of the complete lines, and notes on what was skipped."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SessionError(f"cannot read the session file {path}: {exc.strerror or exc}") from None
    lines = data.split(b"\n")
    notes: list[str] = []
    good = len(data)
    if lines and lines[-1] == b"":
        lines.pop()
    elif lines:
        # No newline at the end: the process died while writing this line. Everything before it is whole.
        good = len(data) - len(lines[-1])
        lines.pop()
        notes.append("dropped a half-written last line")
    parsed: list[Record] = []
    for number, line in enumerate(lines, 1):
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if not isinstance(record, dict) or not isinstance(record.get("type"), str):
            raise SessionError(f"{path}:{number}: not a session record; the file is damaged")
        parsed.append(record)
    if not parsed or parsed[0]["type"] != "session":
        raise SessionError(f"{path}: not a nami session file (its first line is not a session header)")
    header = parsed[0]
    version = header.get("version")
    if not isinstance(version, int) or version < 1:
        raise SessionError(f"{path}: unknown session format version {version!r}")
    if version > VERSION:
        raise SessionError(f"{path} was written by a newer nami (session format {version}; this nami reads "
                           f"up to {VERSION}); upgrade nami to use it")
    records = parsed[1:]
    while version < VERSION:
        upgrade = UPGRADES[version]
        records = [new for old in records for new in upgrade(old)]
        version += 1
    header = {**header, "version": VERSION}
    return header, records, good, notes


def rebuild(records: list[Record]) -> list[dict[str, Any]]:
    """The history after every append and replace, as it was last sent."""
    messages: list[dict[str, Any]] = []
    for record in records:
        kind = record["type"]
        if kind == "message":
            index = record.get("index", len(messages))
            # An index below the end means the list was cut back (an older writer's replace, a repair).
            del messages[index:]
            messages.append(record["message"])
        elif kind == "replace":
            messages = list(record["messages"])
    return messages


def repair(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """Give every tool call without a result an "interrupted" result, right after its siblings' results;
    drop results that answer no call. A strict provider refuses a history with either."""
    repaired: list[dict[str, Any]] = []
    notes: list[str] = []
    pending: list[str] = []

    def close_pending() -> None:
        for call_id in pending:
            repaired.append({"role": "tool", "tool_call_id": call_id, "content": INTERRUPTED_RESULT})
            notes.append(f"tool call {call_id} had no result: answered as interrupted")
        pending.clear()

    for message in messages:
        role = message.get("role")
        if role == "tool":
            if message.get("tool_call_id") in pending:
                pending.remove(message["tool_call_id"])
                repaired.append(message)
            else:
                notes.append(f"dropped a tool result that answers no call ({message.get('tool_call_id')})")
            continue
        close_pending()
        repaired.append(message)
        if role == "assistant":
            pending = [c.get("id") for c in message.get("tool_calls") or [] if isinstance(c, dict)]
    close_pending()
    return repaired, notes


def load_session(path: Path) -> LoadedSession:
    header, records, good, notes = read_records(path)
    rebuilt = rebuild(records)
    messages, repairs = repair(rebuilt)
    return LoadedSession(path, header, messages, records, [*notes, *repairs], good, messages != rebuilt)


@dataclass
class SessionSummary:
    """One line of ``nami sessions``."""

    id: str
    created: str
    updated: float  # the file's modification time
    workspace: str
    model: str | None
    first_task: str | None
    totals: Totals
    runs: int


def summarize(path: Path) -> SessionSummary:
    """What a listing shows, read without rebuilding the history."""
    header, records, _, _ = read_records(path)
    session = LoadedSession(path, header, [], records)
    return SessionSummary(session.id, str(header.get("created", "")), path.stat().st_mtime,
                          str(header.get("workspace", "")), session.config.get("model"), session.first_task,
                          session.totals, sum(r["type"] == "final" for r in records))
