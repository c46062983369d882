"""One decision path: a write where writing runs code (a git hook) under a rule that allows the tool asks
for exec approval whoever makes the call: the model, a person (`nami tools call`), a dry run. (`mcp serve`
and batch: tests/mcp/test_serve.py, tests/batch/test_batch_run.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nami_yaml import Agent, ApprovalRequest
from nami_yaml.testing import ScriptedModel, call, text, tool_calls
from tests.helpers import run_nami, write

HOOK = ".git/hooks/pre-commit"
AGENT = ("tools: {builtin: [write_file, read_file]}\n"
         "rules:\n  - tool: write_file\n    decision: allow\n    reason: writes are fine here\n")


@pytest.fixture
def project(workdir: Path) -> Path:
    write(workdir / "agent.yaml", AGENT)
    (workdir / ".git" / "hooks").mkdir(parents=True)
    assert run_nami(None, "trust", "--yes", cwd=workdir).returncode == 0
    return workdir


def hook_call() -> object:
    return call("write_file", {"path": HOOK, "content": "#!/bin/sh\necho pwned\n"})


def test_the_models_call_asks_for_exec_approval(project: Path) -> None:
    asked: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> bool:
        asked.append(request)
        return False

    model = ScriptedModel([tool_calls(hook_call()), text("ok")])
    Agent.from_config(client=model, approve=approve).run("add a hook")
    [request] = asked
    assert request.pending.source == "permissions.exec" and "git runs its hooks" in (request.pending.reason or "")
    assert not (project / HOOK).exists()
    refused = ScriptedModel([tool_calls(hook_call()), text("ok")])
    Agent.from_config(client=refused).run("add a hook")  # nobody to ask: refused
    assert "no one to ask" in refused.requests[1]["messages"][-1]["content"] and not (project / HOOK).exists()


def test_the_same_call_by_hand_asks_too_and_is_refused_without_a_terminal(project: Path) -> None:
    by_hand = run_nami(None, "tools", "call", "write_file", f"path={HOOK}", "content=#!/bin/sh", cwd=project)
    assert by_hand.returncode == 1 and not (project / HOOK).exists()
    assert "denied by no approver" in by_hand.stderr and "permissions.exec" in by_hand.stderr
    other = run_nami(None, "tools", "call", "write_file", "path=notes.txt", "content=x", cwd=project)
    assert other.returncode == 0 and (project / "notes.txt").read_text() == "x"  # the rule's allow holds elsewhere
    approved = run_nami(None, "tools", "call", "write_file", f"path={HOOK}", "content=#!/bin/sh", "--yes", cwd=project)
    assert approved.returncode == 0 and (project / HOOK).read_text() == "#!/bin/sh"


def test_the_dry_run_of_the_call_by_hand_says_it_would_ask(project: Path) -> None:
    shown = run_nami(None, "tools", "call", "write_file", f"path={HOOK}", "content=x", "--dry-run", "--json",
                     cwd=project)
    assert shown.returncode == 0, shown.stderr
    decision = json.loads(shown.stdout)["decision"]
    assert decision.startswith("ask (permissions.exec asks") and "you would be asked" in decision
    assert not (project / HOOK).exists()


def test_the_models_dry_run_says_it_would_ask(project: Path) -> None:
    model = ScriptedModel([tool_calls(hook_call()), text("ok")])
    events = list(Agent.from_config(client=model, dry_run=True).stream("add a hook"))
    [dry] = [e for e in events if e.type == "dry_run"]
    assert [(c["outcome"], c["by"]) for c in dry.calls] == [("would ask", "permissions.exec")]
    assert not (project / HOOK).exists()
