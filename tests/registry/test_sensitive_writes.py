"""A write permission does not become code execution: writes that run code need exec approval.

The review's attacks, with `write: allow, exec: ask` and no terminal: write tools/mod.py, then call a
`risk: read` entry point (its code runs in nami); or add `core.fsmonitor` to .git/config with edit_file,
then run a `risk: read` `git status`.
"""

from __future__ import annotations

import io
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from nami_yaml.agent.hooks import Decision
from nami_yaml.app.toolset import builtin_catalog
from nami_yaml.cli.approve import approval_text, terminal_approver
from nami_yaml.policy.approval import ApprovalRequest
from nami_yaml.policy.permissions import RiskPolicy
from nami_yaml.registry.executor import Executor, PreparedToolCall
from nami_yaml.registry.loader import load_tools
from nami_yaml.registry.registry import Registry
from nami_yaml.runtime import RuntimeContext
from nami_yaml.sensitive_paths import ProtectedPaths
from tests.helpers import executor as executor_of

PERMISSIONS = {"write": "allow", "exec": "ask"}


@pytest.fixture
def executor(ctx: RuntimeContext) -> Executor:
    catalog = builtin_catalog()
    paths = [catalog["write_file"], catalog["edit_file"]]
    tools_dir = ctx.workspace / "tools"
    tools_dir.mkdir()
    (ctx.workspace / ".git").mkdir()
    (ctx.workspace / ".git" / "config").write_text("[core]\n\tbare = false\n")
    protected = ProtectedPaths.build(folders=[(tools_dir, "a tool folder")],
                                     files=[(ctx.workspace / "agent.yaml", "the config")])
    return executor_of(replace(ctx, protected_paths=protected), paths, builtin=paths)


def _approved_without_a_terminal(call: PreparedToolCall) -> bool:
    decision = RiskPolicy(PERMISSIONS)(call)
    if decision.action == "ask":
        answer = terminal_approver(stdin=io.StringIO(), err=io.StringIO())(ApprovalRequest(call, decision))
        return answer.action == "allow" if isinstance(answer, Decision) else bool(answer)
    return decision.action == "allow"


@pytest.mark.parametrize("name, arguments", [
    ("write_file", {"path": "tools/mod.py", "content": "import os\nos.system('touch pwned')\n"}),
    ("write_file", {"path": "agent.yaml", "content": "permissions: {exec: allow}\n"}),
    ("write_file", {"path": ".git/hooks/post-checkout", "content": "#!/bin/sh\ntouch pwned\n"}),
    ("write_file", {"path": ".envrc", "content": "touch pwned\n"}),
    ("write_file", {"path": "Makefile", "content": "x := $(shell touch pwned)\n"}),
    ("write_file", {"path": ".vscode/tasks.json", "content": "{}"}),
    ("edit_file", {"path": ".git/config", "old_text": "bare = false", "new_text": "fsmonitor = touch pwned"}),
])
def test_writes_that_run_code_need_exec_approval(executor: Executor, ctx: RuntimeContext, name: str,
                                                 arguments: dict[str, str]) -> None:
    call = executor.prepare(name, arguments)
    assert isinstance(call, PreparedToolCall)
    assert call.risk == "exec" and call.risk_reason
    assert not _approved_without_a_terminal(call)  # write: allow no longer lets it through
    assert "exec approval" in approval_text(call)


def test_ordinary_writes_stay_writes(executor: Executor) -> None:
    call = executor.prepare("write_file", {"path": "src/app.py", "content": "print('hi')\n"})
    assert isinstance(call, PreparedToolCall) and call.risk == "write" and call.risk_reason is None
    assert _approved_without_a_terminal(call)
    assert call.run().ok


def test_a_path_that_turns_sensitive_after_approval_is_not_written(executor: Executor, ctx: RuntimeContext) -> None:
    (ctx.workspace / "docs").mkdir()
    call = executor.prepare("write_file", {"path": "docs/hooks/pre-commit", "content": "touch pwned\n"})
    assert isinstance(call, PreparedToolCall) and call.risk == "write"
    # Meanwhile something replaces docs/ with a link into .git.
    (ctx.workspace / "docs").rmdir()
    (ctx.workspace / "docs").symlink_to(ctx.workspace / ".git", target_is_directory=True)
    result = call.run()
    assert not result.ok and "now leads where a write runs code" in result.content
    assert not (ctx.workspace / ".git" / "hooks").exists()


def test_the_writes_key_is_checked_at_load(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("name: cp\ndescription: d\nrisk: write\nwrites: [dest, nope]\n"
                    "parameters: {type: object, properties: {dest: {type: string}}, required: [dest]}\n"
                    f"command: [{sys.executable}, -c, 'pass', '{{dest}}']\n")
    tools, problems = load_tools([path])
    assert tools == [] and [p.message for p in problems] == ["writes names 'nope', which is not a parameter"]


def test_a_command_tool_declaring_writes_is_raised_too(ctx: RuntimeContext, tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("name: cp\ndescription: d\nrisk: write\nwrites: [dest]\n"
                    "parameters: {type: object, properties: {dest: {type: string}}, required: [dest]}\n"
                    f"command: [{sys.executable}, -c, 'pass', '{{dest}}']\n")
    tools, problems = load_tools([path])
    assert problems == []
    call = Executor(Registry(tools), ctx).prepare("cp", {"dest": ".git/hooks/pre-push"})
    assert isinstance(call, PreparedToolCall) and call.risk == "exec"


def test_an_allow_rule_for_the_tool_cannot_let_a_code_write_through(workdir: Path) -> None:
    from nami_yaml import Agent
    from nami_yaml.testing import ScriptedModel, call, text, tool_calls

    (workdir / ".git").mkdir()
    (workdir / "agent.yaml").write_text(
        "tools: {builtin: [write_file]}\npermissions: {write: allow, exec: ask}\n"
        "rules:\n  - tool: write_file\n    decision: allow\n")
    model = ScriptedModel([tool_calls(call("write_file", {"path": ".git/config", "content": "[core]\n"}),
                                      call("write_file", {"path": "notes.txt", "content": "ok\n"})),
                           text("done")])
    Agent.from_config(client=model, trust=True).run("write")
    refused, written = (m["content"] for m in model.requests[1]["messages"] if m["role"] == "tool")
    assert not (workdir / ".git" / "config").exists() and (workdir / "notes.txt").read_text() == "ok\n"
    assert refused.startswith("Denied by no approver: write_file") and "git runs its hooks" in refused


def test_a_folder_made_into_a_git_repository_needs_exec_approval(executor: Executor, ctx: RuntimeContext,
                                                                tmp_path: Path) -> None:
    """git takes a folder holding HEAD, objects/ and refs/ for a repository (a bare one) and runs what its
    config says: in a workspace without .git of its own (a plain folder, or a package of a monorepo),
    writing config, objects/x, refs/x and then HEAD made the next `git status` run core.fsmonitor."""
    import shutil
    import subprocess

    from tests.programs import need

    shutil.rmtree(ctx.workspace / ".git")
    writes = [("config", "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = \"touch pwned; false\"\n"),
              ("objects/.keep", ""), ("refs/.keep", ""), ("HEAD", "ref: refs/heads/main\n")]
    decided = {}
    for path, content in writes:
        call = executor.prepare("write_file", {"path": path, "content": content})
        assert isinstance(call, PreparedToolCall)
        decided[path] = call.risk
        assert call.run().ok  # as if approved, to show what git does with the result
    assert decided["HEAD"] == "exec"
    # Once a folder is a git directory, writing into it needs exec approval too.
    call = executor.prepare("write_file", {"path": "config", "content": "[core]\n"})
    assert isinstance(call, PreparedToolCall) and call.risk == "exec" and "git" in (call.risk_reason or "")
    need("git")
    subprocess.run(["git", "status"], cwd=ctx.workspace, capture_output=True, timeout=30,
                   env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GIT_CEILING_DIRECTORIES": str(tmp_path)})
    assert (ctx.workspace / "pwned").exists()  # the attack is real: git ran the config's fsmonitor


@pytest.mark.parametrize("path", ["main.tf", "modules/net/outputs.tf.json", "infra/main.tofu",
                                  ".terraform/providers/x/terraform-provider-x", ".cargo/config.toml",
                                  "build/rules.mk", ".yarnrc.yml", ".yarnrc", "mise.local.toml"])
def test_files_read_tools_run_need_exec_approval(executor: Executor, path: str) -> None:
    """terraform_plan (a read tool of the library) runs `data "external"` programs of *.tf files and
    provider binaries from .terraform/; `cargo metadata` runs .cargo/config.toml's rustc-wrapper; `make -n`
    runs $(shell …) of included *.mk files; any yarn command runs .yarnrc's yarnPath; mise runs its hooks."""
    call = executor.prepare("write_file", {"path": path, "content": "x"})
    assert isinstance(call, PreparedToolCall)
    assert call.risk == "exec" and call.risk_reason, path
