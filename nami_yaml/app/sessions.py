"""Session files for a conversation: a new one recorded from now on, or an earlier one taken up again with
the exact history its last request sent. Plain values in, a SessionWriter (an event subscriber) out;
:class:`SessionRecording` subscribes it to an agent's bus, so the agent knows nothing else of files."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from nami_yaml.agent.events import EventBus
from nami_yaml.config.effective import Effective
from nami_yaml.runners.spill import session_spill_dir
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


def session_facts(settings: Effective, workspace: Path, definitions: list[dict[str, Any]]) -> SessionFacts:
    """The facts of a conversation run with ``settings`` in ``workspace``, sending tools ``definitions``."""
    model = settings.model
    return SessionFacts(workspace, settings.config_path, model.provider, model.name, model.base_url, definitions)


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


class _Named(Protocol):
    session_id: str  # what the audit log records calls under (the agent's Guards)


class SessionRecording:
    """The session file one agent's conversation is saved in, if any: subscribed to its ``bus`` while it is
    recorded, naming the calls of ``named`` (its guards' session id) after itself, and keeping the tools'
    saved output (the context's ``spill_dir``) beside itself."""

    def __init__(self, bus: EventBus, named: _Named, saved_output_in: Callable[[Path], None]):
        self.bus = bus
        self.named = named
        self.saved_output_in = saved_output_in  # tells the agent where its tools' saved output now goes
        self.writer: SessionWriter | None = None

    @property
    def path(self) -> Path | None:
        """The file the conversation is saved in (it exists once the first message is written)."""
        return self.writer.path if self.writer is not None else None

    def record(self, facts: SessionFacts, messages: Iterable[dict[str, Any]], store: SessionStore | None = None,
               *, extra: dict[str, Any] | None = None) -> SessionWriter:
        """End any session being recorded and start a new one (see :func:`new_session`)."""
        store = store or SessionStore()
        self.end()
        writer = new_session(facts, messages, store, extra=extra)
        self._attach(writer, store)
        return writer

    def resume(self, facts: SessionFacts, ref: str | None = None, *, store: SessionStore | None = None,
               force: bool = False) -> LoadedSession:
        """End any session being recorded and go on saving to session ``ref`` (see :func:`continue_session`);
        what it loaded, for the agent to take up."""
        store = store or SessionStore()
        self.end()
        writer, loaded = continue_session(facts, ref, store=store, force=force)
        self._attach(writer, store)
        return loaded

    def _attach(self, writer: SessionWriter, store: SessionStore) -> None:
        self.writer = writer
        self.bus.add(writer)
        self.named.session_id = writer.id
        # Saved output belongs to the session: a continued session can read the paths its results named.
        self.saved_output_in(session_spill_dir(name=writer.id, keep=store.has))

    def end(self) -> None:
        """Stop recording and release the file (its lock)."""
        writer, self.writer = self.writer, None
        if writer is not None:
            self.bus.remove(writer)
            writer.close()
