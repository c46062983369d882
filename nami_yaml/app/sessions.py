"""An Agent wired to a session file: a new one recorded as it runs, or an earlier one continued with the
exact history its last request sent."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from nami_yaml.runners.spill import session_spill_dir
from nami_yaml.session.loader import LoadedSession, load_session
from nami_yaml.session.store import SessionRefused, SessionStore, new_session_id
from nami_yaml.session.writer import SessionWriter, now_iso
from nami_yaml.version import __version__

if TYPE_CHECKING:
    from nami_yaml.app.agent import Agent


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()).hexdigest()


def session_config(agent: Agent) -> dict[str, Any]:
    """What a session ran with: enough to tell whether continuing it here would change its meaning."""
    get = agent.settings.get
    definitions = agent.loop.toolbox.definitions()
    return {
        "config_path": str(agent.settings.config_path) if agent.settings.config_path else None,
        "provider": get("model.provider"), "model": get("model.name"), "base_url": get("model.base_url"),
        "tools_hash": _digest(definitions)[:16],
        "tools": {d["function"]["name"]: _digest(d)[:12] for d in definitions},
    }


def record_session(agent: Agent, store: SessionStore | None = None) -> SessionWriter:
    """Save the agent's conversation from now on, in a new session file (created on the first message)."""
    store = store or SessionStore()
    store.prepare()
    session_id = new_session_id()
    header = {"created": now_iso(), "workspace": str(agent.project.context.workspace), "nami": __version__,
              "config": session_config(agent)}
    writer = SessionWriter(store.path(session_id), session_id, header=header, messages=agent.messages)
    _attach(agent, writer, store)
    return writer


def resume_session(agent: Agent, ref: str | None = None, *, store: SessionStore | None = None,
                   force: bool = False) -> tuple[SessionWriter, LoadedSession]:
    """Continue session ``ref`` (an id or its start; None: the latest of this workspace). Its history
    replaces the agent's, repaired if an interruption left a tool call unanswered, and the repair is
    recorded. A session of another workspace or tool set is refused unless ``force``."""
    store = store or SessionStore()
    path = store.latest(agent.project.context.workspace) if ref is None else store.find(ref)
    # Locked before it is read: what is loaded is what this process goes on from.
    writer = SessionWriter.reopen(path, path.stem)
    try:
        loaded = load_session(path)
        config = session_config(agent)
        if not force:
            _check_resumable(loaded, agent, config)
        writer.cut(loaded.good_bytes)
        writer.write({"type": "resume", "at": now_iso(), "config": config, "repairs": loaded.repairs,
                      "forced": force})
        if loaded.repaired:
            writer.write({"type": "replace", "reason": "repair", "messages": loaded.messages})
    except BaseException:
        writer.close()
        raise
    agent.restore(loaded.messages)
    agent.meter.session = loaded.totals
    _attach(agent, writer, store)
    return writer, loaded


def _check_resumable(loaded: LoadedSession, agent: Agent, config: dict[str, Any]) -> None:
    here = str(agent.project.context.workspace)
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


def _attach(agent: Agent, writer: SessionWriter, store: SessionStore) -> None:
    agent.close()  # one session at a time
    agent.bus.add(writer)
    agent.meter.listeners.append(writer.record_step)
    agent.compactor.listeners.append(writer.record_compaction)
    agent.session_id = writer.id
    # Saved output belongs to the session: a continued session can read the paths its results named.
    agent.project.context.spill_dir = session_spill_dir(name=writer.id, keep=store.has)
