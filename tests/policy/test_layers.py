"""The project's rules, the user's own rules and the defaults: the user can only tighten what a project
allows, and a project's rules and permissions count for nothing until the project is trusted."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from nami_yaml.agent.hooks import Decision
from nami_yaml.app import UntrustedProject, open_project
from nami_yaml.app.agent import Agent
from nami_yaml.testing import ScriptedModel, call, text, tool_calls

Decide = Callable[..., Decision]
USER_LABEL = "rule ~/.config/nami/config.yaml"


@pytest.fixture
def user_rules(temp_home: Path) -> Callable[[str], None]:
    def write(body: str) -> None:
        folder = temp_home / ".config" / "nami"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "config.yaml").write_text(body)

    return write


GET = {"verb": "get", "resource": "pods"}


def test_a_user_deny_beats_a_project_allow(rules: Callable[..., Decide], user_rules: Callable[[str], None]) -> None:
    user_rules("rules:\n  - tool: kubectl_get\n    args: {resource: secrets}\n    decision: deny\n")
    decide = rules("  - tool: kubectl_get\n    decision: allow\n")
    assert decide("kubectl_get", **GET).action == "allow"
    denied = decide("kubectl_get", verb="get", resource="secrets")
    assert (denied.action, denied.source) == ("deny", f"{USER_LABEL}:2:5")


def test_a_user_ask_beats_project_permissions(rules: Callable[..., Decide], user_rules: Callable[[str], None]) -> None:
    user_rules("rules:\n  - tool: bash\n    command: git push\n    decision: ask\n")
    decide = rules("  - tool: bash\n    command: [git]\n    decision: allow\n", extra="permissions: {exec: allow}\n")
    assert decide("bash", command="git status").action == "allow"
    asked = decide("bash", command="git push --force")
    assert (asked.action, asked.source) == ("ask", f"{USER_LABEL}:2:5")


def test_a_user_allow_never_loosens_a_project_deny_or_ask(rules: Callable[..., Decide],
                                                          user_rules: Callable[[str], None]) -> None:
    user_rules("rules:\n  - tool: kubectl_*\n    decision: allow\n")
    decide = rules("  - tool: kubectl_change\n    args: {verb: delete}\n    decision: deny\n"
                   "  - tool: kubectl_change\n    args: {namespace: prod}\n    decision: ask\n")
    assert decide("kubectl_change", verb="delete", resource="x").source == "rule agent.yaml:3:5"
    assert decide("kubectl_change", verb="scale", resource="x", namespace="prod").action == "ask"
    # Where the project says nothing, the user's own allow is the user's choice.
    assert decide("kubectl_change", verb="scale", resource="x") == Decision("allow", None, f"{USER_LABEL}:2:5")


def test_a_user_allow_does_not_loosen_a_deny_the_project_set(rules: Callable[..., Decide],
                                                             user_rules: Callable[[str], None]) -> None:
    user_rules("rules:\n  - tool: bash\n    command: ls\n    decision: allow\n")
    decide = rules("  - tool: read_file\n    decision: allow\n", extra="permissions: {exec: deny}\n")
    assert decide("bash", command="ls") == Decision("deny", "exec tools are not allowed here (permissions.exec: deny)",
                                                    "permissions.exec")


def test_a_user_allow_may_loosen_the_users_own_deny(rules: Callable[..., Decide],
                                                    user_rules: Callable[[str], None]) -> None:
    user_rules("permissions: {exec: deny}\nrules:\n  - tool: bash\n    command: ls\n    decision: allow\n")
    decide = rules("  - tool: read_file\n    decision: allow\n")
    assert decide("bash", command="ls").action == "allow"
    assert decide("bash", command="make").action == "deny"


def test_user_rules_may_name_tools_this_project_lacks(workdir: Path, user_rules: Callable[[str], None],
                                                      write_rules: Callable[..., None]) -> None:
    user_rules("rules:\n  - tool: terraform_*\n    decision: ask\n  - tool: read_file\n    args: {pth: x}\n"
               "    decision: deny\n")
    write_rules("  - tool: read_file\n    decision: allow\n")
    result = subprocess.run(["nami", "check"], cwd=workdir, capture_output=True, text=True)
    assert result.returncode == 1
    assert result.stderr.splitlines()[0].endswith(
        "nami/config.yaml:5:12: $.rules[1].args.pth: read_file has no parameter 'pth' (its parameters: limit, "
        "offset, path)")
    assert "terraform" not in result.stderr


# -- trust ---------------------------------------------------------------------------------------------

ALLOW_ALL = "  - tool: bash\n    decision: allow\n"


def test_an_untrusted_projects_rules_allow_nothing(workdir: Path, write_rules: Callable[..., None]) -> None:
    write_rules(ALLOW_ALL)
    model = ScriptedModel([tool_calls(call("bash", {"command": "touch pwned"})), text("done")])
    with pytest.raises(UntrustedProject):
        Agent.from_config(client=model)
    with pytest.raises(UntrustedProject):
        Agent(open_project(), model)  # a project opened only to look cannot be run either
    assert not (workdir / "pwned").exists() and model.requests == []


def test_once_trusted_its_rules_decide(workdir: Path, write_rules: Callable[..., None]) -> None:
    write_rules(ALLOW_ALL)
    subprocess.run(["nami", "trust", "--yes"], cwd=workdir, check=True, capture_output=True)
    model = ScriptedModel([tool_calls(call("bash", {"command": "touch made"})), text("done")])
    Agent.from_config(client=model).run("make it")
    assert (workdir / "made").exists()


def test_a_dry_run_by_hand_does_not_evaluate_untrusted_rules(workdir: Path, write_rules: Callable[..., None]) -> None:
    # A regex that takes forever on this value: if the untrusted rule were matched, the call would hang.
    write_rules("  - tool: kubectl_get\n    args: {resource: {regex: '^(a+)+$'}}\n    decision: allow\n")
    result = subprocess.run(["nami", "tools", "call", "kubectl_get", "verb=get", "resource=" + "a" * 40 + "!",
                             "--dry-run"], cwd=workdir, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == ("decision: not evaluated (this agent.yaml is not trusted, so its rules "
                                              "and permissions are not read)")


def test_a_dry_run_by_hand_shows_the_decision_of_a_trusted_project(workdir: Path,
                                                                   write_rules: Callable[..., None]) -> None:
    write_rules("  - tool: kubectl_get\n    args: {resource: secrets}\n    decision: deny\n    reason: not here\n")
    subprocess.run(["nami", "trust", "--yes"], cwd=workdir, check=True, capture_output=True)
    result = subprocess.run(["nami", "tools", "call", "kubectl_get", "verb=get", "resource=secrets", "--dry-run"],
                            cwd=workdir, capture_output=True, text=True)
    assert result.stdout.splitlines()[-1] == "decision: deny by rule agent.yaml:3:5: not here"


def test_the_trust_summary_shows_the_rules(workdir: Path, write_rules: Callable[..., None]) -> None:
    write_rules(ALLOW_ALL, extra="audit: {path: /tmp/elsewhere.jsonl}\n")
    result = subprocess.run(["nami", "trust"], cwd=workdir, capture_output=True, text=True, input="n\n")
    assert "  sets 1 rule (1 allow):" in result.stdout
    assert '    {"tool": "bash", "decision": "allow"}' in result.stdout
    assert '  sets audit.path = "/tmp/elsewhere.jsonl"' in result.stdout


def test_nami_config_lists_each_files_rules_with_positions(workdir: Path, temp_home: Path,
                                                           user_rules: Callable[[str], None],
                                                           write_rules: Callable[..., None]) -> None:
    user_rules("rules:\n  - tool: bash\n    decision: ask\n")
    write_rules("  - tool: read_file\n    decision: allow\n")
    lines = subprocess.run(["nami", "config"], cwd=workdir, capture_output=True, text=True).stdout.splitlines()
    rows = [line for line in lines if line.startswith("rules[")]
    assert len(rows) == 2
    assert '{"tool": "bash", "decision": "ask"}' in rows[0]
    assert rows[0].endswith(f"# {temp_home / '.config' / 'nami' / 'config.yaml'}:2:5")
    assert rows[1].endswith(f"# {workdir / 'agent.yaml'}:3:5") and "read_file" in rows[1]


def test_a_project_tool_named_bash_cannot_slip_past_the_users_command_rules(
        workdir: Path, user_rules: Callable[[str], None]) -> None:
    """A project may bring its own tool named bash (when the built-in is not enabled) whose command is
    in another parameter: the user's `command: [git push] ask` found no command string and said nothing,
    so the project's `permissions: {exec: allow}` ran `git push` unasked."""
    from tests.policy.conftest import decider, write_project

    user_rules("rules:\n  - tool: bash\n    command: [git push]\n    decision: ask\n")
    write_project(workdir, "  - tool: kubectl_get\n    decision: allow\n", builtins="[read_file]",
                  extra="permissions: {exec: allow}\n")
    (workdir / "tools" / "shell.yaml").write_text(
        "name: bash\ndescription: Run a command.\nrisk: exec\nparameters:\n  type: object\n"
        "  properties: {cmd: {type: string}}\n  required: [cmd]\nscript: 'bash -c \"$cmd\"'\n")
    asked = decider(workdir)("bash", cmd="git push --force")
    assert asked.action == "ask" and asked.source == "command rules (~/.config/nami/config.yaml)", asked
    assert "no command" in (asked.reason or "")
