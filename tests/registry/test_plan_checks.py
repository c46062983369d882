"""``plan:`` in a tool file (issue 43 item 4): what `nami check` accepts and refuses, at file:line:col."""

from __future__ import annotations

from pathlib import Path

from nami_yaml.errors import Problem
from nami_yaml.registry.loader import load_tool_file
from nami_yaml.runners.command import CommandRunner
from nami_yaml.runners.plan_step import PlanSpec
from tests.helpers import run_nami, write

HEAD = """\
name: apply
description: Apply the plan.
risk: write
parameters: {type: object, properties: {dir: {type: string, default: "."}}}
"""


def problems(folder: Path, text: str) -> list[Problem]:
    return load_tool_file(write(folder / "t.yaml", text))[1]


def where(problem: Problem) -> str:
    return f"{problem.line}:{problem.col}: {problem.path}: {problem.message}"


def test_a_plan_with_its_file_loads(workdir: Path) -> None:
    [tool], found = load_tool_file(write(workdir / "t.yaml", HEAD + """\
plan:
  command: [tf, "-chdir={dir}", plan, "-out={plan_file}"]
  show: [tf, show, "{plan_file}"]
  timeout: 30
command: [tf, "-chdir={dir}", apply, "{plan_file}"]
"""))
    assert found == []
    assert isinstance(tool.runner, CommandRunner)
    assert tool.runner.plan == PlanSpec(command=("tf", "-chdir={dir}", "plan", "-out={plan_file}"),
                                        show=("tf", "show", "{plan_file}"), timeout=30)


def test_plan_file_only_where_a_plan_writes_it(workdir: Path) -> None:
    without_plan = problems(workdir, HEAD + 'command: [tf, apply, "{plan_file}"]\n')
    assert [where(p) for p in without_plan] == [
        "5:22: $.command[2]: {plan_file} is the call's plan file: it may appear only in the command: and plan: of "
        "a command tool that declares plan:"]
    in_stdin = problems(workdir, HEAD + 'plan: {command: [tf, plan, "-out={plan_file}"]}\ncommand: [tf, apply]\n'
                                        'stdin: "{plan_file}"\n')
    assert [where(p) for p in in_stdin] == [
        "7:8: $.stdin: {plan_file} is the call's plan file: it may appear only in the command: and plan: of a "
        "command tool that declares plan:"]
    unwritten = problems(workdir, HEAD + 'plan: {command: [kubectl, diff]}\ncommand: [tf, apply, "{plan_file}"]\n')
    assert [where(p) for p in unwritten] == [
        '6:22: $.command[2]: {plan_file} is written by the plan step: plan.command must name it too (e.g. '
        '[terraform, plan, -out, "{plan_file}"])']


def test_plan_keys_and_placeholders_are_checked_like_a_command(workdir: Path) -> None:
    found = problems(workdir, HEAD + """\
plan: {command: [tf, plan, "{dri}"], show: [], timeout: 0, exit_codes: [0, 300], after: yes}
command: [tf, apply]
""")
    assert sorted(where(p) for p in found) == sorted([
        "5:28: $.plan.command[2]: placeholder {dri} names no parameter (declared: dir); did you mean 'dir'?",
        "5:44: $.plan.show: [] should be non-empty",
        "5:57: $.plan.timeout: 0 is less than or equal to the minimum of 0",
        "5:76: $.plan.exit_codes[1]: 300 is greater than the maximum of 255",
        "5:82: $.plan.after: unknown key 'after'",
    ]), [where(p) for p in found]


def test_a_plan_is_for_command_tools_and_plan_file_is_not_a_parameter(workdir: Path) -> None:
    script = problems(workdir, HEAD + "plan: {command: [tf, plan]}\nscript: echo hi\n")
    assert [where(p) for p in script] == ["5:1: $.plan: plan: is for command: tools; a script tool cannot have one"]
    named = problems(workdir, HEAD.replace("dir: {type: string", "plan_file: {type: string")
                     + 'plan: {command: [tf, plan, "-out={plan_file}"]}\ncommand: [tf, apply, "{plan_file}"]\n')
    assert [where(p) for p in named] == [
        "4:41: $.parameters.properties.plan_file: 'plan_file' is the call's plan file in a tool with plan:, not a "
        "parameter: rename it"]


def test_nami_check_reports_them_with_file_line_and_column(workdir: Path) -> None:
    write(workdir / "agent.yaml", "tools: {builtin: [], files: [tools/]}\n")
    write(workdir / "tools" / "t.yaml", HEAD + 'command: [tf, apply, "{plan_file}"]\n')
    checked = run_nami(None, "check", cwd=workdir)
    assert checked.returncode == 1
    assert "tools/t.yaml:5:22: $.command[2]: {plan_file} is the call's plan file" in checked.stdout + checked.stderr
