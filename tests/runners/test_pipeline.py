"""``pipeline:`` tools: argv stages connected by pipes in one sandbox, no shell, failing like pipefail.

Real processes in real bwrap: the stages run inside the call's sandbox through nami's own launcher."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from nami_yaml.registry.executor import PreparedToolCall
from nami_yaml.registry.loader import check_tools
from nami_yaml.result import ToolResult
from nami_yaml.runtime import RuntimeContext
from tests.helpers import tool_executor
from tests.programs import need_bwrap
from tests.runners.test_command import HOSTILE

ARGV = f'[{sys.executable}, -c, "import sys,json;print(json.dumps(sys.argv[1:]))", "{{value}}", "x={{value}}"]'


@pytest.fixture
def sandboxed(ctx: RuntimeContext) -> RuntimeContext:
    need_bwrap()
    return replace(ctx, sandbox=replace(ctx.sandbox, mode="required"))


def call(ctx: RuntimeContext, text: str, args: dict) -> ToolResult:
    executor = tool_executor(ctx, text)
    return executor.execute(executor.registry.names()[0], args)


PASS_ON = f"""\
name: pass_on
description: Show the argv of the first stage through a second.
parameters: {{type: object, properties: {{value: {{type: string}}}}, required: [value]}}
pipeline: [{ARGV}, [cat]]
"""

@pytest.mark.parametrize("value", HOSTILE)
def test_values_stay_one_argument_in_every_stage(sandboxed: RuntimeContext, value: str) -> None:
    (sandboxed.workspace / "some_file").write_text("x")  # a glob would expand to this
    passed_on = call(sandboxed, PASS_ON, {"value": value})
    assert (passed_on.ok, json.loads(passed_on.content)) == (True, [value, f"x={value}"])
    assert list(sandboxed.workspace.iterdir()) == [sandboxed.workspace / "some_file"]  # no pwned file


def test_a_value_starting_with_a_dash_is_refused_in_a_later_stage(sandboxed: RuntimeContext) -> None:
    text = ("name: g\ndescription: d\nparameters: {type: object, properties: {p: {type: string}}, required: [p]}\n"
            "pipeline: [[printf, 'a\\nb\\n'], [grep, '{p}']]\n")
    result = call(sandboxed, text, {"p": "--help"})
    assert not result.ok
    assert "value '--help' of parameter 'p' starts with '-'" in result.content


def test_stages_run_piped_inside_the_sandbox(sandboxed: RuntimeContext) -> None:
    text = ("name: g\ndescription: d\nparameters: {type: object, properties: {p: {type: string}}, required: [p]}\n"
            "pipeline: [[printf, 'pear\\napple\\nplum\\n'], [grep, '{p}'], [sort]]\n")
    executor = tool_executor(sandboxed, text)
    prepared = executor.prepare("g", {"p": "p"})
    assert isinstance(prepared, PreparedToolCall)
    assert prepared.kind == "pipeline"
    assert prepared.invocation.sandbox.active
    assert prepared.invocation.describe() == "printf 'pear\\napple\\nplum\\n' | grep p | sort"
    assert prepared.invocation.plan()["pipeline"] == [["printf", "pear\\napple\\nplum\\n"], ["grep", "p"], ["sort"]]
    result = executor.execute("g", {"p": "p"})
    assert result.ok, result.content
    assert result.content.splitlines() == ["apple", "pear", "plum"]


FAILING = f"""\
name: failing
description: The first stage fails; the last one succeeds.
pipeline:
  - [{sys.executable}, -c, "import sys; sys.stderr.write('boom from the first'); sys.exit(3)"]
  - [cat]
"""


def test_a_failing_stage_fails_the_call_and_is_named_with_its_stderr(sandboxed: RuntimeContext) -> None:
    result = call(sandboxed, FAILING, {})
    assert not result.ok
    assert result.details["exit_code"] == 3
    assert "boom from the first" in result.content
    assert "pipeline stage 1 of 2" in result.content and "exited with code 3" in result.content


def test_an_upstream_stage_stopped_by_head_is_not_a_failure(sandboxed: RuntimeContext) -> None:
    text = "name: first\ndescription: d\npipeline: [['yes'], [head, -n, '2']]\n"
    result = call(sandboxed, text, {})
    assert result.ok, result.content
    assert result.content.splitlines()[:2] == ["y", "y"]
    assert "stage" not in result.content


def test_a_missing_program_names_its_stage(sandboxed: RuntimeContext) -> None:
    text = "name: missing\ndescription: d\npipeline: [[printf, a], [no-such-program-here]]\n"
    result = call(sandboxed, text, {})
    assert not result.ok
    assert "pipeline stage 2 (no-such-program-here) could not start" in result.content


def test_each_stage_is_checked_like_a_command(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("name: t\ndescription: d\nparameters: {type: object, properties: {a: {type: string}}}\n"
                    "pipeline: [[printf, x], [grep, '{b}'], [head, '{a}']]\n", encoding="utf-8")
    _, problems = check_tools([path])
    messages = [f"{p.path}: {p.message}" for p in problems if p.is_error]
    assert any(m.startswith("$.pipeline[1][1]: placeholder {b} names no parameter") for m in messages), messages
    assert any(m.startswith("$.pipeline[2][1]: 'a' is optional with no default") for m in messages), messages
