"""Named agents and sub-agents against the fake server, each conversation routed by its first user message:
`--agent` sends the agent's prompt and only its tools; a parent hands a task to agent__reviewer and gets
its answer; a child never has more rights than its caller; the depth limit; budgets shared; sessions nested;
`nami check`, `nami agents`, batch and the Python API."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from nami_yaml import Agent
from nami_yaml.errors import ConfigError, SpecError
from nami_yaml.session.loader import load_session
from nami_yaml.session.store import SessionStore
from nami_yaml.testing import FakeOpenAIServer, ScriptedModel, call, text, tool_calls
from tests.helpers import run_nami, write

AGENT_YAML = """\
model: {provider: custom, name: fake-model}
tools: {builtin: [read_file, write_file, bash, list_dir]}
audit: {path: audit.jsonl}
agents:
  reviewer:
    description: Reviews a change and reports problems; never edits.
    system: prompts/reviewer.md
    tools: [read_file, list_dir]
    permissions: {write: deny, exec: deny}
    subagents: [fixer]
  fixer:
    description: Fixes what it is told.
    tools: [read_file, write_file, bash]
    permissions: {exec: allow}
"""


@pytest.fixture
def project(workdir: Path) -> Path:
    write(workdir / "agent.yaml", AGENT_YAML)
    write(workdir / "prompts" / "reviewer.md", "You are the reviewer. Report problems; never edit.\n")
    assert run_nami(None, "trust", "--yes", cwd=workdir).returncode == 0
    return workdir


def names(body: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in body.get("tools") or []]


def conversation(server: FakeOpenAIServer, marker: str) -> list[dict[str, Any]]:
    """The requests of the conversation whose first user message holds ``marker``."""
    return [r for r in server.requests if marker in next(m["content"] for m in r["messages"] if m["role"] == "user")]


def test_run_agent_sends_its_prompt_and_only_its_tools(project: Path) -> None:
    with FakeOpenAIServer() as server:
        server.add_task("[r]", text("nothing to report"))
        result = run_nami(server, "run", "--agent", "reviewer", "[r] review the change", cwd=project)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "nothing to report"
        [request] = server.requests
    assert request["messages"][0]["content"].startswith("You are the reviewer. Report problems; never edit.")
    assert names(request) == ["read_file", "list_dir", "tool_docs", "agent__fixer"]
    unknown = run_nami(None, "run", "--agent", "reviwer", "x", cwd=project)
    assert unknown.returncode == 2 and "no agent is named 'reviwer'; did you mean 'reviewer'?" in unknown.stderr


def test_a_parent_gets_the_childs_answer_as_the_tool_result(project: Path) -> None:
    with FakeOpenAIServer() as server:
        server.add_task("[p]", tool_calls(call("agent__reviewer", {"task": "[c] review app.py"})), text("All good."))
        server.add_task("[c]", tool_calls(call("list_dir", {})), text("app.py has no problems"))
        result = run_nami(server, "run", "[p] get app.py reviewed", cwd=project)
        assert result.returncode == 0, result.stderr
        parent, child = conversation(server, "[p]"), conversation(server, "[c]")
    assert "agent__reviewer" in names(parent[0]) and "agent__fixer" in names(parent[0])
    assert child[0]["messages"][0]["content"].startswith("You are the reviewer")
    assert [m["role"] for m in child[0]["messages"]] == ["system", "user"]  # a fresh conversation
    assert parent[1]["messages"][-1] == {"role": "tool", "tool_call_id": parent[1]["messages"][-2]["tool_calls"][0]["id"],
                                         "content": "app.py has no problems"}
    audit = [json.loads(line) for line in (project / "audit.jsonl").read_text().splitlines()]
    by_tool = {entry["tool"]: entry for entry in audit}
    assert by_tool["list_dir"]["agent"] == "reviewer"
    assert by_tool["list_dir"]["parent_session"] == by_tool["agent__reviewer"]["session"]


def test_a_child_that_allows_exec_still_needs_the_person(project: Path) -> None:
    with FakeOpenAIServer() as server:
        server.add_task("[p]", tool_calls(call("agent__fixer", {"task": "[f] make the file"})), text("asked"))
        server.add_task("[f]", tool_calls(call("bash", {"command": "touch made"})), text("could not"))
        result = run_nami(server, "run", "[p] fix it", cwd=project)  # no terminal: nobody can say yes
        assert result.returncode == 0, result.stderr
        fixer = conversation(server, "[f]")
    assert not (project / "made").exists()
    assert "permissions.exec asks" in fixer[1]["messages"][-1]["content"]
    assert "not approved (no terminal" in result.stderr
    with FakeOpenAIServer() as server:  # --yes of the parent applies to its sub-agents
        server.add_task("[p]", tool_calls(call("agent__fixer", {"task": "[f] make the file"})), text("made"))
        server.add_task("[f]", tool_calls(call("bash", {"command": "touch made"})), text("done"))
        assert run_nami(server, "run", "--yes", "[p] fix it", cwd=project).returncode == 0
    assert (project / "made").exists()


def test_a_sub_agent_has_the_intersection_of_its_rights_and_its_callers(project: Path) -> None:
    # The reviewer may not write; the fixer it hands a task to may not either, even with --yes.
    with FakeOpenAIServer() as server:
        server.add_task("[p]", tool_calls(call("agent__reviewer", {"task": "[r] review and fix"})), text("ok"))
        server.add_task("[r]", tool_calls(call("agent__fixer", {"task": "[f] write it"})), text("reviewed"))
        server.add_task("[f]", tool_calls(call("write_file", {"path": "x.txt", "content": "x"})), text("tried"))
        assert run_nami(server, "run", "--yes", "[p] go", cwd=project).returncode == 0
        fixer = conversation(server, "[f]")
    assert not (project / "x.txt").exists()
    assert "Denied by agent reviewer: permissions.write" in fixer[1]["messages"][-1]["content"]


@pytest.mark.parametrize(("depth", "offered"), [(1, False), (2, True)])
def test_the_depth_limit(project: Path, depth: int, offered: bool) -> None:
    write(project / "agent.yaml", AGENT_YAML.replace("audit:", f"limits: {{max_agent_depth: {depth}}}\naudit:"))
    assert run_nami(None, "trust", "--yes", cwd=project).returncode == 0
    with FakeOpenAIServer() as server:
        server.add_task("[p]", tool_calls(call("agent__reviewer", {"task": "[r] look"})), text("ok"))
        server.add_task("[r]", text("looked"))
        assert run_nami(server, "run", "[p] go", cwd=project).returncode == 0
        [reviewer] = conversation(server, "[r]")
    assert ("agent__fixer" in names(reviewer)) is offered


def test_subagents_in_agent_yaml_narrow_what_the_top_level_agent_gets(project: Path) -> None:
    write(project / "agent.yaml", AGENT_YAML + "subagents: [reviewer]\n")
    assert [d["function"]["name"] for d in Agent.from_config("agent.yaml", client=ScriptedModel()).loop.toolbox
            .definitions() if d["function"]["name"].startswith("agent__")] == ["agent__reviewer"]
    write(project / "agent.yaml", AGENT_YAML + "subagents: []\n")
    assert not any(d["function"]["name"].startswith("agent__")
                   for d in Agent.from_config("agent.yaml", client=ScriptedModel()).loop.toolbox.definitions())


def test_the_childs_session_is_linked_and_shown_nested(project: Path) -> None:
    with FakeOpenAIServer() as server:
        server.add_task("[p]", tool_calls(call("agent__reviewer", {"task": "[c] review"})), text("reviewed"),
                        text("went on"))
        server.add_task("[c]", text("the child's conclusion"))
        assert run_nami(server, "run", "[p] review please", cwd=project).returncode == 0
        again = run_nami(server, "run", "--continue", "go on", cwd=project)  # the parent, not the child
        assert again.returncode == 0, again.stderr
        assert conversation(server, "[p]")[-1]["messages"][-1]["content"] == "go on"
    store = SessionStore()
    sessions = {path.stem: load_session(path) for path in (store.path(i) for i in store.ids())}
    [parent] = [s for s in sessions.values() if not s.header.get("parent")]
    [child] = [s for s in sessions.values() if s.header.get("parent")]
    assert child.header["parent"] == parent.id and child.header["agent"] == "reviewer"
    linked = [r for r in parent.records if r["type"] == "subagent"]
    assert linked == [{"type": "subagent", "agent": "reviewer", "session": child.id, "status": "answered"}]
    shown = run_nami(None, "sessions", "show", parent.id, cwd=project).stdout
    assert "┌ sub-agent reviewer: answered" in shown and "│ › [c] review" in shown
    assert "│ the child's conclusion" in shown
    page = project / "page.html"
    assert run_nami(None, "sessions", "export", parent.id, "--html", str(page), cwd=project).returncode == 0
    assert 'class="subagent"' in page.read_text() and "the child&#x27;s conclusion" in page.read_text()


def test_the_childs_requests_count_into_the_parents_steps(project: Path) -> None:
    write(project / "agent.yaml", AGENT_YAML.replace("audit:", "limits: {max_steps: 3}\naudit:"))
    assert run_nami(None, "trust", "--yes", cwd=project).returncode == 0
    with FakeOpenAIServer() as server:
        server.add_task("[p]", tool_calls(call("agent__reviewer", {"task": "[c] look"})), text("never reached"))
        server.add_task("[c]", tool_calls(call("list_dir", {})), text("looked"))
        result = run_nami(server, "run", "--json", "[p] go", cwd=project)
        final = json.loads(result.stdout.splitlines()[-1])
    # 1 request of the parent, 2 of the child: the limit of 3 is reached before the parent's second.
    assert result.returncode == 3 and final["status"] == "max_steps" and final["totals"]["steps"] == 3


def test_ctrl_c_stops_the_whole_tree(project: Path) -> None:
    started = project / "started"
    model = ScriptedModel()
    model.add(tool_calls(call("agent__fixer", {"task": "sleep"})))  # the parent
    model.add(tool_calls(call("bash", {"command": f"touch {started}; sleep 60; touch {project / 'finished'}"})))
    agent = Agent.from_config("agent.yaml", client=model, assume_yes=True)
    stopper = threading.Thread(target=lambda: (_wait_for(started), agent.cancel()), daemon=True)
    stopper.start()
    outcome = agent.run("go")
    stopper.join(timeout=30)
    assert outcome.status == "interrupted"
    assert started.exists() and not (project / "finished").exists()


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + 60
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)


def test_the_python_api_and_the_tools_list(project: Path) -> None:
    model = ScriptedModel([text("as the reviewer")])
    agent = Agent.from_config("agent.yaml", client=model, agent="reviewer")
    assert agent.run("hi").final_text == "as the reviewer"
    assert model.requests[0]["messages"][0]["content"].startswith("You are the reviewer")
    with pytest.raises(ConfigError, match="no agent is named 'nobody'"):
        Agent.from_config("agent.yaml", client=ScriptedModel(), agent="nobody")
    listed = json.loads(run_nami(None, "agents", "--json", cwd=project).stdout)
    assert [(a["name"], a["tools"]) for a in listed] == [("reviewer", ["read_file", "list_dir", "tool_docs"]),
                                                         ("fixer", ["read_file", "write_file", "bash", "tool_docs"])]
    # The fixer's `exec: allow` is wider than the project's exec (ask), which holds, as `nami check` says.
    assert [(a["name"], a["permissions"]) for a in listed] == [("reviewer", {"write": "deny", "exec": "deny"}),
                                                               ("fixer", {"exec": "ask"})]
    assert listed[1]["declared_permissions"] == {"exec": "allow"}
    shown = run_nami(None, "agents", cwd=project).stdout
    assert "  rights: exec: ask (it says allow: the project's ask holds); model: fake-model" in shown
    assert "  rights: write: deny, exec: deny; model: fake-model" in shown
    risks = {d["function"]["name"]: d for d in Agent.from_config("agent.yaml", client=ScriptedModel()).registry
             .definitions()}
    assert "agent__reviewer" in risks
    registry = Agent.from_config("agent.yaml", client=ScriptedModel()).registry
    assert registry.get("agent__reviewer").risk == "exec"  # it may hand work to the fixer, which runs bash
    write(project / "agent.yaml", AGENT_YAML.replace("    subagents: [fixer]\n", ""))
    assert Agent.from_config("agent.yaml", client=ScriptedModel()).registry.get("agent__reviewer").risk == "read"


def test_check_names_what_is_wrong_with_an_agent(project: Path) -> None:
    write(project / "agents" / "deployer.yaml", "description: Deploys.\nsystem: prompts/missing.md\n"
                                                "tools: [kubectl_aply, read_fiel]\nsubagents: [revewer]\n")
    checked = run_nami(None, "check", cwd=project)
    assert checked.returncode == 1
    err = checked.stderr
    assert "agents/deployer.yaml:2:9: $.system: cannot read the prompt file prompts/missing.md" in err
    write(project / "agents" / "deployer.yaml", "description: Deploys.\n"
                                                "tools: [kubectl_aply, read_fiel]\nsubagents: [revewer]\n")
    err = run_nami(None, "check", cwd=project).stderr
    assert "agents/deployer.yaml:2:9: $.tools[0]: agent deployer: no tool is named 'kubectl_aply'" in err
    assert "$.tools[1]: agent deployer: no tool is named 'read_fiel'; did you mean 'read_file'?" in err
    assert "agents/deployer.yaml:3:13: $.subagents[0]: no agent is named 'revewer'; did you mean 'reviewer'?" in err
    assert "agent.yaml:14:25: $.agents.fixer.permissions.exec: warning: agent fixer: exec: allow is wider" in err
    with pytest.raises(SpecError):
        Agent.from_config("agent.yaml", client=ScriptedModel())


def test_a_batch_task_can_name_its_agent(project: Path) -> None:
    tasks = write(project / "tasks.yaml", "tasks:\n  - {id: r, prompt: '[r] review', agent: reviewer}\n")
    with FakeOpenAIServer() as server:
        server.add_task("[r]", text("reviewed in a batch"))
        result = run_nami(server, "batch", "run", str(tasks), "-o", str(project / "out.jsonl"), cwd=project,
                          env={"NAMI_API_KEY": "k"})
        assert result.returncode == 0, result.stderr
        [request] = server.requests
    assert request["messages"][0]["content"].startswith("You are the reviewer")
    assert json.loads((project / "out.jsonl").read_text().splitlines()[0])["answer"] == "reviewed in a batch"
