"""Session files from the library side: written as the agent runs, read back exactly, upgraded, repaired,
refused when they do not belong here. The agent runs on the in-memory ScriptedModel (strict: it refuses
any history a real provider would refuse)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from nami_yaml import Agent
from nami_yaml.runners.spill import session_spill_dir
from nami_yaml.session import loader
from nami_yaml.session.loader import INTERRUPTED_RESULT, load_session, rebuild, repair, summarize
from nami_yaml.session.store import SessionError, SessionRefused, SessionStore
from nami_yaml.session.writer import SessionWriter
from nami_yaml.testing import ScriptedModel, call, text, tool_calls, usage


def agent_with(model: ScriptedModel, **options: Any) -> Agent:
    return Agent.from_config(client=model, assume_yes=True, **options)


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def test_a_run_is_saved_line_by_line_and_rebuilds_the_history_exactly(workdir: Path) -> None:
    (workdir / "notes.txt").write_text("café ☕\n")
    model = ScriptedModel([tool_calls(call("read_file", {"path": "notes.txt"}), usage=usage(100, 20, 60)),
                           text("It mentions café.", usage=None)])
    agent = agent_with(model)
    writer = agent.record_session()
    outcome = agent.run("What is in notes.txt?")
    assert outcome.status == "answered" and agent.session_id == writer.id

    lines = records(writer.path)
    assert [r["type"] for r in lines] == ["session", "message", "message", "message", "usage", "message", "message",
                                          "usage", "final"]
    header = lines[0]
    assert header["version"] == 1 and header["workspace"] == str(workdir)
    assert set(header["config"]["tools"]) == {d["function"]["name"] for d in agent.loop.toolbox.definitions()}
    # deepseek-chat's preset list price: 40 uncached and 60 cached input tokens, 20 output tokens.
    assert lines[4] == {"type": "usage", "prompt_tokens": 100, "cached_tokens": 60, "completion_tokens": 20,
                        "reasoning_tokens": 0, "estimated": False, "kind": "step",
                        "cost": pytest.approx((40 * 0.28 + 60 * 0.028 + 20 * 0.42) / 1e6)}
    assert lines[7]["estimated"] is True and lines[7]["prompt_tokens"] > 0  # no usage reported: an estimate
    assert os.stat(writer.path).st_mode & 0o777 == 0o600
    assert os.stat(writer.path.parent).st_mode & 0o777 == 0o700

    session = load_session(writer.path)
    assert session.messages == model.requests[1]["messages"] + [outcome.messages[-1]]
    assert session.messages == outcome.messages and not session.repairs and not session.repaired
    assert session.first_task == "What is in notes.txt?"
    assert session.totals.steps == 2 and session.totals.estimated_requests == 1
    summary = summarize(writer.path)
    assert summary.runs == 1 and summary.totals.prompt_tokens == session.totals.prompt_tokens


def test_a_chat_left_without_a_word_leaves_no_file(workdir: Path) -> None:
    agent = agent_with(ScriptedModel())
    writer = agent.record_session()
    assert not writer.path.exists()
    assert SessionStore().ids() == []


def test_a_resumed_agent_sends_what_a_never_interrupted_one_would(workdir: Path) -> None:
    script = [tool_calls(call("list_dir", {}, id="call_a")), text("empty"), text("still empty")]
    straight = ScriptedModel(script)
    first_agent = agent_with(straight)
    first_agent.run("look")
    first_agent.run("look again")

    first = agent_with(ScriptedModel(script[:2]))
    first.record_session()
    first.run("look")
    first.close()
    resumed_model = ScriptedModel(script[2:])
    resumed = agent_with(resumed_model)
    loaded = resumed.resume_session()
    assert loaded.id == first.session_id and resumed.session_id == first.session_id
    resumed.run("look again")
    assert resumed_model.requests[0] == straight.requests[2]
    assert load_session(loaded.path).messages == resumed.messages


def test_an_interrupted_tool_call_is_answered_on_load_and_the_repair_recorded(workdir: Path) -> None:
    agent = agent_with(ScriptedModel([text("hello")]))
    writer = agent.record_session()
    agent.run("hi")
    agent.close()
    # What a killed process leaves: the assistant's calls written, their results never, half a line last.
    with open(writer.path, "ab") as file:
        assistant = {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "make"}'}},
            {"id": "c2", "type": "function", "function": {"name": "list_dir", "arguments": "{}"}}]}
        file.write(json.dumps({"type": "message", "index": 3, "message": {"role": "user", "content": "build"}}).encode() + b"\n")
        file.write(json.dumps({"type": "message", "index": 4, "message": assistant}).encode() + b"\n")
        file.write(json.dumps({"type": "message", "index": 5, "message": {
            "role": "tool", "tool_call_id": "c1", "content": "ok"}}).encode() + b"\n")
        file.write(b'{"type":"message","index":6,"mess')

    session = load_session(writer.path)
    assert session.repaired
    assert session.messages[-1] == {"role": "tool", "tool_call_id": "c2", "content": INTERRUPTED_RESULT}
    assert any("half-written" in note for note in session.repairs)

    model = ScriptedModel([text("The build was interrupted; checking.")])
    resumed = agent_with(model)
    resumed.resume_session(writer.id[:12])
    assert resumed.run("what happened?").status == "answered"  # the strict model accepted the history
    sent = model.requests[0]["messages"]
    assert [m["role"] for m in sent[-4:]] == ["assistant", "tool", "tool", "user"]
    lines = records(writer.path)  # the half line is gone and the repair is on disk
    assert [r["type"] for r in lines[-6:]] == ["resume", "replace", "message", "message", "usage", "final"]
    assert lines[-6]["repairs"] and lines[-5]["reason"] == "repair"
    assert load_session(writer.path).messages == resumed.messages


def test_repair_drops_stray_results_and_keeps_valid_histories_as_they_are() -> None:
    valid = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
             {"role": "assistant", "content": None, "tool_calls": [{"id": "a", "type": "function",
                                                                    "function": {"name": "x", "arguments": "{}"}}]},
             {"role": "tool", "tool_call_id": "a", "content": "r"}, {"role": "assistant", "content": "done"}]
    assert repair(valid) == (valid, [])
    fixed, notes = repair([*valid, {"role": "tool", "tool_call_id": "zz", "content": "stray"}])
    assert fixed == valid and "answers no call" in notes[0]


def test_replace_records_cut_the_history_and_clear_is_kept(workdir: Path) -> None:
    agent = agent_with(ScriptedModel([text("one"), text("two")]))
    writer = agent.record_session()
    agent.run("first")
    agent.reset()
    agent.run("second")
    messages = load_session(writer.path).messages
    assert [m.get("content") for m in messages[1:]] == ["second", "two"]
    assert rebuild([{"type": "message", "index": 0, "message": {"n": 0}}, {"type": "message", "index": 1,
                    "message": {"n": 1}}, {"type": "message", "index": 1, "message": {"n": 2}}]) == [{"n": 0}, {"n": 2}]


def test_a_damaged_or_newer_file_is_refused_with_its_place(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text('{"type":"session","version":1,"id":"x"}\nnot json\n{"type":"final"}\n')
    with pytest.raises(SessionError, match=r"s\.jsonl:2: not a session record"):
        load_session(path)
    path.write_text('{"type":"session","version":99,"id":"x"}\n')
    with pytest.raises(SessionError, match="newer nami"):
        load_session(path)
    path.write_text('{"type":"message"}\n')
    with pytest.raises(SessionError, match="not a nami session file"):
        load_session(path)


def test_older_versions_are_upgraded_record_by_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Pretend the current format is 2, where a usage line lost its "tokens" field to two others.
    def v1_to_v2(record: dict[str, Any]) -> list[dict[str, Any]]:
        if record["type"] != "usage":
            return [record]
        return [{"type": "usage", "prompt_tokens": record["tokens"] // 2, "completion_tokens": record["tokens"] // 2}]

    monkeypatch.setattr(loader, "VERSION", 2)
    monkeypatch.setitem(loader.UPGRADES, 1, v1_to_v2)
    path = tmp_path / "old.jsonl"
    path.write_text('{"type":"session","version":1,"id":"x"}\n{"type":"usage","tokens":10}\n')
    session = load_session(path)
    assert session.header["version"] == 2
    assert session.totals.prompt_tokens == 5 and session.totals.completion_tokens == 5


def test_another_workspace_or_tool_set_is_refused_unless_forced(workdir: Path, tmp_path: Path) -> None:
    with agent_with(ScriptedModel([text("hi")])) as agent:
        writer = agent.record_session()
        agent.run("hello")

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    other = agent_with(ScriptedModel(), cwd=elsewhere)
    with pytest.raises(SessionRefused, match="recorded in .*work.*pass --force"):
        other.resume_session(writer.id)
    with pytest.raises(SessionRefused, match="no earlier session"):
        other.resume_session()
    other.resume_session(writer.id, force=True)
    with pytest.raises(SessionError, match="in use by another nami"):  # `other` holds it until closed
        agent_with(ScriptedModel(), cwd=elsewhere).resume_session(writer.id, force=True)
    other.close()

    (workdir / "agent.yaml").write_text("tools: {builtin: [read_file, bash]}\n")
    fewer = Agent.from_config("agent.yaml", client=ScriptedModel())
    with pytest.raises(SessionRefused, match=r"other tools \(removed: edit_file, fetch_url, glob, grep"):
        fewer.resume_session(writer.id)


def test_ids_are_found_by_their_start(temp_home: Path) -> None:
    store = SessionStore()
    store.prepare()
    for session_id in ("20250101-120000-aaaaaa", "20250101-120000-aaaabb", "20250102-090000-cccccc"):
        (store.folder / f"{session_id}.jsonl").write_text(json.dumps({"type": "session", "version": 1}) + "\n")
    assert store.find("20250102").name == "20250102-090000-cccccc.jsonl"
    assert store.find("20250101-120000-aaaaaa").name == "20250101-120000-aaaaaa.jsonl"
    with pytest.raises(SessionRefused, match="matches 2 sessions"):
        store.find("20250101-120000-aaaa")
    with pytest.raises(SessionRefused, match="no session"):
        store.find("1999")
    with pytest.raises(SessionRefused, match="not a session id"):
        store.path("../../etc/passwd")


def test_saved_output_is_named_by_the_session_and_pruning_keeps_kept_sessions(tmp_path: Path) -> None:
    base = tmp_path / "output"
    base.mkdir()
    old = time.time() - 30 * 86400
    for name in ("session-kept", "session-gone"):
        (base / name).mkdir()
        os.utime(base / name, (old, old))
    named = session_spill_dir(base, name="abc", keep=lambda session_id: session_id == "kept")
    assert named == base / "session-abc"
    assert (base / "session-kept").is_dir() and not (base / "session-gone").exists()


def test_the_writer_never_follows_a_planted_link(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_text("")
    link = tmp_path / "20250101-120000-aaaaaa.jsonl"
    link.symlink_to(target)
    writer = SessionWriter(link, "20250101-120000-aaaaaa", header={})
    with pytest.raises(SessionError, match="cannot write"):
        writer.write({"type": "final"})
    assert target.read_text() == ""
