"""A parameter schema whose ``$ref`` comes back to itself without reaching into the arguments
(``$defs: {a: {$ref: "#/$defs/a"}}``) passed the checks and crashed ``nami tools call`` with a
RecursionError: it is refused at load with file:line:col, and nothing validates with it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nami_yaml.registry.executor import Executor
from nami_yaml.registry.loader import load_tools
from nami_yaml.registry.ref_cycles import ref_problems
from nami_yaml.registry.registry import Registry
from nami_yaml.registry.tool import Tool
from nami_yaml.runners.command import CommandRunner
from nami_yaml.runners.options import ProcessOptions
from nami_yaml.runtime import RuntimeContext
from tests.helpers import nami, write

TOOL = """\
name: t
description: d
risk: read
parameters:
  type: object
  required: [x]
  properties:
    x: {{$ref: "#/$defs/a"}}
  $defs:
{defs}
command: [echo, "{{x}}"]
"""


@pytest.mark.parametrize(("defs", "line", "col"), [
    ('    a: {$ref: "#/$defs/a"}', 10, 15),  # the column of the $ref's value that closes the cycle
    ('    a: {$ref: "#/$defs/b"}\n    b: {allOf: [{$ref: "#/$defs/a"}]}', 11, 24),
    ('    a: {not: {anyOf: [{type: string}, {$ref: "#/$defs/a"}]}}', 10, 46),
    ('    a: {$anchor: me, oneOf: [{$ref: "#me"}]}', 10, 37),
])
def test_a_ref_cycle_is_refused_at_load_with_its_position(defs: str, line: int, col: int, tmp_path: Path) -> None:
    tools, problems = load_tools([write(tmp_path / "t.yaml", TOOL.format(defs=defs))])
    assert tools == []
    cycle = [p for p in problems if "comes back to itself" in p.message]
    assert len(cycle) == 1, problems
    assert (cycle[0].line, cycle[0].col) == (line, col)


def test_nami_tools_call_says_so_instead_of_a_traceback(workdir: Path) -> None:
    write(workdir / "t.yaml", TOOL.format(defs='    a: {$ref: "#/$defs/a"}'))
    result = nami("tools", "call", "--tools", "t.yaml", "t", "x=1")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "t.yaml:10:15: $.parameters['$defs'].a['$ref']: $ref comes back to itself" in result.output


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"child": {"$ref": "#"}}},  # a tree: each step goes one level down
    {"type": "object", "properties": {"x": {"$ref": "#/$defs/list"}},
     "$defs": {"list": {"type": "array", "items": {"$ref": "#/$defs/list"}}}},
    {"type": "object", "properties": {"x": {"$ref": "#/$defs/a"}}, "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {}}},
])
def test_recursion_that_reaches_into_the_arguments_is_fine(schema: dict[str, Any]) -> None:
    assert ref_problems(schema) == []


def test_a_ref_to_nothing_is_refused_at_load(tmp_path: Path) -> None:
    tools, problems = load_tools([write(tmp_path / "t.yaml", TOOL.format(defs='    a: {$ref: "#/$defs/nope"}'))])
    assert tools == [] and any("#/$defs/nope" in p.message and "nothing" in p.message for p in problems)


def test_a_tool_from_elsewhere_with_a_cycle_gets_an_error_result(ctx: RuntimeContext) -> None:
    """An MCP server's tool is not loaded from YAML: validating its arguments must not crash either."""
    schema = {"type": "object", "properties": {"x": {"$ref": "#/$defs/a"}}, "$defs": {"a": {"$ref": "#/$defs/a"}}}
    tool = Tool("t", "d", schema, "read", CommandRunner(["echo", "ok"], ProcessOptions()), "elsewhere")
    result = Executor(Registry([tool]), ctx).execute("t", '{"x": 1}')
    assert not result.ok and "comes back to itself" in result.content
