"""The fixed part of every request stays small: the default system prompt plus the default tool definitions,
counted in the bytes the real client sends to the fake server (a count, not a timing), and the facts that
keep the model safe and correct are still in what is sent; the rest is in docs read on demand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nami_yaml.app import open_project
from nami_yaml.testing import FakeOpenAIServer, call, text, tool_calls
from tests.helpers import json_span, run_nami, write

BUDGET = 4_200

# Facts a model must see without asking (each a phrase of a description as sent).
MUST_SAY = {
    "read_file": ["number and a tab, which are not part of the file", "2000 lines", "offset to continue"],
    "write_file": ["replace all of its content", "edit_file"],
    "edit_file": ["match exactly", "once (unless replace_all)", "the file is unchanged"],
    "list_dir": ["At most 500"],
    "grep": ["Python regular expression", "at most 200 lines", "Skips hidden, .gitignored and binary"],
    "glob": ["without a slash it matches names at any depth", "At most 500"],
    "bash": ["new shell", "stdin closed", "secret variables removed", "killed with its children at the timeout",
             "saved to a file the result names"],
    "fetch_url": ["public http(s)", "Internal addresses are refused: do not retry them under another spelling"],
}


def test_system_prompt_and_default_tools_fit_the_budget_as_sent(workdir: Path) -> None:
    with FakeOpenAIServer([text("hi")]) as server:
        result = run_nami(server, "run", "hi", cwd=workdir)
    assert result.returncode == 0, result.stderr
    raw = server.raw_requests[0].decode("utf-8")
    body = json.loads(raw)
    tools = json.dumps(body["tools"], ensure_ascii=False, separators=(",", ":"))
    system = json.dumps(body["messages"][0]["content"], ensure_ascii=False)
    assert tools in raw and system in raw  # exactly these characters went over the wire
    sent = len(body["messages"][0]["content"]) + sum(
        len(json.dumps(t, ensure_ascii=False, separators=(",", ":"))) for t in body["tools"])
    assert sent <= BUDGET, f"{sent} characters: over the budget of {BUDGET}"
    names = [t["function"]["name"] for t in body["tools"]]
    assert names == ["read_file", "write_file", "edit_file", "list_dir", "grep", "glob", "bash", "fetch_url",
                     "tool_docs"]


def test_descriptions_keep_the_facts_that_matter_and_point_at_their_docs(workdir: Path) -> None:
    project = open_project(cwd=workdir)
    definitions = {d["function"]["name"]: d["function"]["description"] for d in project.registry.definitions()}
    for name, phrases in MUST_SAY.items():
        for phrase in phrases:
            assert phrase in definitions[name], f"{name}: {phrase!r} is missing"
        assert definitions[name].endswith(" Details: tool_docs.")
        docs = project.context.tool_docs[name].file
        assert docs is not None and docs.read_text().startswith(f"# {name}(")
        assert docs.read_text() not in json.dumps(project.registry.definitions())


# -- tools sent on demand --------------------------------------------------------------------------------

LIBRARY = "tools:\n  library: [docker, git, helm, http, jq, kubectl, system, systemd, terraform]\n"
# Pi 0.73.1's first request, measured (issue 25): 2,295 characters of system prompt and 2,953 of tools.
# `python -m bench` measures Pi live where npm can install it; this is the bar the test holds nami to.
PI_FIXED_PART = 2_295 + 2_953


def fixed_part(body: dict) -> int:
    return len(body["messages"][0]["content"]) + sum(
        len(json.dumps(t, ensure_ascii=False, separators=(",", ":"))) for t in body["tools"])


def test_the_whole_library_starts_no_heavier_than_pi(workdir: Path) -> None:
    write(workdir / "agent.yaml", LIBRARY)
    with FakeOpenAIServer([text("hi")]) as server:
        result = run_nami(server, "run", "--config", "agent.yaml", "hi", cwd=workdir)
    assert result.returncode == 0, result.stderr
    body = json.loads(server.raw_requests[0])
    assert fixed_part(body) <= PI_FIXED_PART
    names = [t["function"]["name"] for t in body["tools"]]
    assert names[-1] == "load_tools" and not any(name.startswith("kubectl_") for name in names)
    catalogue = body["tools"][-1]["function"]
    assert "kubectl: kubectl_{apply,describe" in catalogue["description"]  # every tool is named
    assert "kubectl" in catalogue["parameters"]["properties"]["groups"]["items"]["enum"]


def test_loading_a_group_appends_to_the_tools_and_rewrites_nothing(workdir: Path) -> None:
    write(workdir / "agent.yaml", LIBRARY)
    script = [tool_calls(call("load_tools", {"groups": ["kubectl"]})),
              tool_calls(call("load_tools", {"groups": ["git", "kubectl"]})), text("done")]
    with FakeOpenAIServer(script) as server:
        result = run_nami(server, "run", "--config", "agent.yaml", "look", cwd=workdir)
        assert result.returncode == 0, result.stderr
        raws = server.raw_requests
    first, second, third = (json.loads(raw) for raw in raws)
    tools = [[t["function"]["name"] for t in body["tools"]] for body in (first, second, third)]
    kubectl = [name for name in tools[1] if name.startswith("kubectl_")]
    assert tools[1] == tools[0] + kubectl and "kubectl_get" in kubectl
    assert tools[2] == tools[1] + [name for name in tools[2] if name.startswith("git_")]
    for before, after in zip(raws, raws[1:], strict=False):  # the bytes of what was sent before, sent again
        old_tools, new_tools = json_span(before, b'"tools"'), json_span(after, b'"tools"')
        assert new_tools.startswith(old_tools[:-1])  # all but the closing "]"
        assert json_span(after, b'"messages"').startswith(json_span(before, b'"messages"')[:-1])
    assert "Loaded (their definitions are in your tools now): kubectl: kubectl_apply" in \
        second["messages"][-1]["content"]


def test_a_tool_is_decided_by_the_same_rules_before_and_after_its_group_loads(workdir: Path) -> None:
    write(workdir / "agent.yaml", LIBRARY + "rules:\n  - {tool: kubectl_scale, decision: deny, reason: not here}\n"
          "audit: {path: audit.jsonl}\n")
    scale = call("kubectl_scale", {"kind": "deployment", "name": "web", "replicas": 0, "namespace": "shop"})
    script = [tool_calls(scale), tool_calls(call("load_tools", {"groups": ["kubectl"]})), tool_calls(scale),
              text("done")]
    with FakeOpenAIServer(script) as server:
        result = run_nami(server, "run", "--config", "agent.yaml", "--yes", "scale it down", cwd=workdir)
        assert result.returncode == 0, result.stderr
        results = [body["messages"][-1]["content"] for body in map(json.loads, server.raw_requests[1:])]
    assert results[0] == results[2] and results[0].startswith("Denied by rule agent.yaml:4:5")
    audit = [json.loads(line) for line in (workdir / "audit.jsonl").read_text().splitlines()]
    assert [(a["tool"], a["status"]) for a in audit] == [("kubectl_scale", "denied"), ("load_tools", "ran"),
                                                         ("kubectl_scale", "denied")]


def test_a_continued_session_has_the_groups_it_loaded(workdir: Path) -> None:
    write(workdir / "agent.yaml", LIBRARY)
    with FakeOpenAIServer([tool_calls(call("load_tools", {"groups": ["helm"]})), text("loaded"),
                           text("still there")]) as server:
        assert run_nami(server, "run", "--config", "agent.yaml", "load helm", cwd=workdir).returncode == 0
        again = run_nami(server, "run", "--config", "agent.yaml", "--continue", "go on", cwd=workdir)
        assert again.returncode == 0, again.stderr
        names = [t["function"]["name"] for t in json.loads(server.raw_requests[-1])["tools"]]
    assert names[-3:] == ["helm_history", "helm_list", "helm_status"]


@pytest.mark.parametrize(("setting", "sent"), [("on_demand: false", True), ("eager: [kubectl]", True),
                                               ("on_demand: true", False)])
def test_what_is_sent_at_start_can_be_chosen(workdir: Path, setting: str, sent: bool) -> None:
    write(workdir / "agent.yaml", f"tools:\n  library: [kubectl, jq]\n  {setting}\n")
    definitions = open_project(cwd=workdir).executor().definitions()
    names = [d["function"]["name"] for d in definitions]
    assert ("kubectl_get" in names) is sent
    # With kubectl sent at once, jq alone is small enough to be sent too: nothing is left to load.
    assert ("load_tools" in names) is (setting == "on_demand: true") and ("jq_filter" in names) is sent


def test_a_few_small_tools_are_sent_at_once(workdir: Path) -> None:
    write(workdir / "agent.yaml", "tools:\n  library: [jq]\n")
    names = [d["function"]["name"] for d in open_project(cwd=workdir).executor().definitions()]
    assert "jq_filter" in names and "load_tools" not in names


def test_context_and_tools_list_show_what_waits(workdir: Path) -> None:
    write(workdir / "agent.yaml", LIBRARY)
    shown = run_nami(None, "context", "--json", cwd=workdir)
    data = json.loads(shown.stdout)
    assert data["chars"] <= PI_FIXED_PART < data["chars_with_every_group_loaded"]
    assert data["tool_groups_on_demand"]["git"][0] == "git_blame"
    listed = {row["name"]: row for row in json.loads(run_nami(None, "tools", "list", "--json", cwd=workdir).stdout)}
    assert listed["kubectl_get"]["on_demand"] is True and listed["read_file"]["on_demand"] is False


