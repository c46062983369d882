"""Session files for a conversation: a new one recorded from now on, or an earlier one taken up again with
the exact history its last request sent. Plain values in, a SessionWriter (an event subscriber) out: the
agent subscribes it to its bus and knows nothing else of files."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nami_yaml.session.loader import LoadedSession, load_session
from nami_yaml.session.store import SessionRefused, SessionStore, new_session_id
from nami_yaml.session.writer import SessionWriter, now_iso
from nami_yaml.version import __version__


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()).hexdigest()


@dataclass(frozen=True)
class SessionFacts:
    """What a session ran with: enough to tell whether continuing it elsewhere would change its meaning."""

    workspace: Path
    config_path: Path | None
    provider: str | None
    model: str | None
    base_url: str | None
    definitions: list[dict[str, Any]]  # the tool definitions every request sends

    def config(self) -> dict[str, Any]:
        return {
            "config_path": str(self.config_path) if self.config_path else None,
            "provider": self.provider, "model": self.model, "base_url": self.base_url,
            "tools_hash": _digest(self.definitions)[:16],
            "tools": {d["function"]["name"]: _digest(d)[:12] for d in self.definitions},
        }


def new_session(facts: SessionFacts, messages: Iterable[dict[str, Any]], store: SessionStore | None = None,
                *, extra: dict[str, Any] | None = None) -> SessionWriter:
    """A new session file for a conversation that holds ``messages`` so far (created on its first record).
    ``extra``: more header fields (a sub-agent's ``agent`` and ``parent`` session)."""
    store = store or SessionStore()
    store.prepare()
    session_id = new_session_id()
    header = {"created": now_iso(), "workspace": str(facts.workspace), "nami": __version__,
              "config": facts.config(), **(extra or {})}
    return SessionWriter(store.path(session_id), session_id, header=header, messages=messages)


def continue_session(facts: SessionFacts, ref: str | None = None, *, store: SessionStore | None = None,
                     force: bool = False) -> tuple[SessionWriter, LoadedSession]:
    """Take up session ``ref`` (an id or its start; None: the latest of this workspace), repaired if an
    interruption left a tool call unanswered (the repair is recorded). A session of another workspace or
    tool set is refused (SessionRefused) unless ``force``."""
    store = store or SessionStore()
    path = store.latest(facts.workspace) if ref is None else store.find(ref)
    # Locked before it is read: what is loaded is what this process goes on from.
    writer = SessionWriter.reopen(path, path.stem)
    try:
        loaded = load_session(path)
        config = facts.config()
        if not force:
            _check_resumable(loaded, facts.workspace, config)
        writer.cut(loaded.good_bytes)
        writer.write({"type": "resume", "at": now_iso(), "config": config, "repairs": loaded.repairs,
                      "forced": force})
        if loaded.repaired:
            writer.write({"type": "replace", "reason": "repair", "messages": loaded.messages})
    except BaseException:
        writer.close()
        raise
    return writer, loaded


def _check_resumable(loaded: LoadedSession, workspace: Path, config: dict[str, Any]) -> None:
    here = str(workspace)
    there = loaded.header.get("workspace")
    if there != here:
        raise SessionRefused(f"session {loaded.id} was recorded in {there}, not in this workspace ({here}); "
                             "continue it from there, or pass --force")
    before = loaded.config.get("tools") or {}
    now = config["tools"]
    if loaded.config.get("tools_hash") != config["tools_hash"]:
        changes = [f"{label}: {', '.join(names)}" for label, names in (
            ("added", sorted(set(now) - set(before))), ("removed", sorted(set(before) - set(now))),
            ("changed", sorted(n for n in set(now) & set(before) if now[n] != before[n]))) if names]
        what = "; ".join(changes) or "their order changed"
        raise SessionRefused(f"session {loaded.id} ran with other tools ({what}); its requests cannot be "
                             "rebuilt as they were. Pass --force to continue with the current tools")
