"""Answers before anyone is asked: yes for the session (same tool, same values), --approve by risk, --yes,
and what an unanswered question tells the model."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from nami_yaml import Agent, ApprovalRequest, Decision
from nami_yaml.policy.approval import SESSION_SOURCE
from nami_yaml.testing import FakeOpenAIServer, ScriptedModel, call, text, tool_calls


@pytest.fixture
def project(workdir: Path) -> Path:
    (workdir / "agent.yaml").write_text(
        "tools: {builtin: [write_file, bash, read_file]}\n"
        "rules:\n  - tool: read_file\n    args: {path: secrets.txt}\n    decision: ask\n    reason: it holds keys\n")
    return workdir


def touch(name: str) -> object:
    return call("bash", {"command": f"touch {name}"})


def test_yes_for_the_session_covers_the_same_call_only(project: Path) -> None:
    asked: list[str] = []

    def approve(request: ApprovalRequest) -> Decision:
        asked.append(request.arguments["command"])
        return request.approve_for_session()

    model = ScriptedModel([tool_calls(touch("a")), tool_calls(touch("a")), tool_calls(touch("b")), text("done")])
    agent = Agent.from_config(client=model, trust=True, approve=approve)
    events: list = []
    agent.run("touch", on_event=events.append)
    assert asked == ["touch a", "touch b"]  # the second `touch a` was not asked again
    sources = [e.source for e in events if e.type == "approval"]
    assert sources == [SESSION_SOURCE, SESSION_SOURCE, SESSION_SOURCE]
    assert (project / "a").exists() and (project / "b").exists()
    # Later turns of the same conversation remember it too; a fresh agent does not.
    model.add(tool_calls(touch("a")), text("again"))
    agent.run("again")
    assert asked == ["touch a", "touch b"]
    fresh = Agent.from_config(client=ScriptedModel([tool_calls(touch("a")), text("x")]), trust=True, approve=approve)
    fresh.run("x")
    assert asked == ["touch a", "touch b", "touch a"]


def test_no_with_a_reason_reaches_the_model(project: Path) -> None:
    model = ScriptedModel([tool_calls(touch("x")), text("ok")])
    Agent.from_config(client=model, trust=True, approve=lambda r: Decision.deny("use make clean", "user")).run("x")
    assert model.requests[1]["messages"][-1]["content"] == (
        "Denied by the user: bash command=\"touch x\". The user said: use make clean. Do not retry the same call; "
        "ask the user or try another way.")


def test_approve_by_risk(project: Path) -> None:
    (project / "secrets.txt").write_text("k\n")
    asked: list[str] = []

    def approve(request: ApprovalRequest) -> bool:
        asked.append(request.name)
        return False

    model = ScriptedModel([tool_calls(call("write_file", {"path": "w.txt", "content": "w"}), touch("t"),
                                      call("read_file", {"path": "secrets.txt"})), text("ok")])
    events: list = []
    Agent.from_config(client=model, trust=True, approve=approve, approve_risks=["write", "read"],
                      on_event=events.append).run("x")
    assert asked == ["bash"]
    assert (project / "w.txt").exists() and not (project / "t").exists()
    assert [(e.name, e.approved, e.source) for e in events if e.type == "approval"] == [
        ("write_file", True, "--approve write"), ("bash", False, "user"), ("read_file", True, "--approve read")]


def test_nobody_to_ask_says_who_asked(project: Path) -> None:
    (project / "secrets.txt").write_text("k\n")
    model = ScriptedModel([tool_calls(call("read_file", {"path": "secrets.txt"})), text("ok")])
    Agent.from_config(client=model, trust=True).run("x")
    assert model.requests[1]["messages"][-1]["content"] == (
        "Denied by no approver: read_file path=\"secrets.txt\" offset=1 limit=2000. Reason: approval is needed and "
        "there is no one to ask (rule agent.yaml:3:5 asks: it holds keys). Do not retry the same call; ask the user "
        "or try another way.")


def test_yes_never_overrides_a_deny(project: Path) -> None:
    (project / "agent.yaml").write_text("tools: {builtin: [bash]}\nrules:\n  - tool: bash\n    command: rm\n"
                                        "    decision: deny\n")
    (project / "keep").write_text("x")
    model = ScriptedModel([tool_calls(call("bash", {"command": "rm keep"})), text("ok")])
    Agent.from_config(client=model, trust=True, assume_yes=True).run("x")
    assert (project / "keep").exists()
    assert model.requests[1]["messages"][-1]["content"].startswith("Denied by rule agent.yaml:3:5: ")


def test_a_bad_rule_stops_a_run_before_anything_runs(workdir: Path) -> None:
    (workdir / "agent.yaml").write_text("tools: {builtin: [bash]}\nrules:\n  - tool: nope\n    decision: deny\n")
    result = subprocess.run(["nami", "run", "--config", "agent.yaml", "--model", "m", "--base-url",
                             "http://127.0.0.1:9/v1", "hi"], cwd=workdir, capture_output=True, text=True)
    assert result.returncode == 2
    assert "agent.yaml:3:11: $.rules[0].tool: no tool is named 'nope'" in result.stderr


def test_yes_for_the_session_expires(project: Path, fake_openai: FakeOpenAIServer) -> None:
    """An approval kept for a retry counts approvals.expires after it was given: here 1 s, and the first
    call itself takes longer (sleep 2), so the same call made again is asked again."""
    (project / "agent.yaml").write_text("tools: {builtin: [bash]}\napprovals: {expires: 1s}\n")
    asked: list[str] = []

    def approve(request: ApprovalRequest) -> Decision:
        asked.append(request.arguments["command"])
        return request.approve_for_session()

    slow = call("bash", {"command": "sleep 2 && touch slow"})
    fake_openai.add(tool_calls(slow), tool_calls(slow), text("done"))
    events: list = []
    Agent.from_config(base_url=fake_openai.base_url, trust=True, approve=approve).run("x", on_event=events.append)
    assert asked == ["sleep 2 && touch slow", "sleep 2 && touch slow"]  # expired: asked again
    assert [e.source for e in events if e.type == "approval"] == [SESSION_SOURCE, SESSION_SOURCE]
