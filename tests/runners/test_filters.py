"""``output:`` grep/lines/head/tail with parameters, and parameters inside ``select``: in-process filters
on the stdout of real processes, the whole output still saved, a value never read as query text."""

from __future__ import annotations

import json
from pathlib import Path

import jmespath
import pytest

from nami_yaml.registry.loader import check_tools
from nami_yaml.result import ToolResult
from nami_yaml.runners.filters import jmespath_literal, render_select
from nami_yaml.runtime import RuntimeContext
from tests.helpers import tool_executor, write

LOG = "".join(f"{n:03d} {'ERROR' if n % 10 == 0 else 'info'} line {n}\n" for n in range(1, 101))

FILTERED = """\
name: show_log
description: Show the log, filtered.
risk: read
parameters:
  type: object
  properties:
    pattern: {type: string}
    start: {type: integer}
    end: {type: integer}
    first: {type: integer}
    last: {type: integer}
command: [cat, log.txt]
output: {grep: "{pattern}", lines: "{start}-{end}", head: "{first}", tail: "{last}"}
"""


def call(ctx: RuntimeContext, args: dict, text: str = FILTERED, content: str = LOG) -> ToolResult:
    write(ctx.workspace / "log.txt", content)
    return tool_executor(ctx, text).execute(text.split("\n", 1)[0].removeprefix("name: "), args)


def shown(result: ToolResult) -> list[str]:
    return [line for line in result.content.splitlines() if not line.startswith("[")]


def saved(result: ToolResult) -> str:
    path = result.details["output"]["full_output"]
    assert path is not None and path in result.content
    return Path(path).read_text(encoding="utf-8")


def test_grep_keeps_the_matching_lines_and_the_whole_output_is_saved(ctx: RuntimeContext) -> None:
    result = call(ctx, {"pattern": "ERROR"})
    assert result.ok, result.content
    assert shown(result) == [f"{n:03d} ERROR line {n}" for n in range(10, 101, 10)]
    assert "10 of 100 lines shown (output.grep 'ERROR')" in result.content
    assert saved(result) == LOG


def test_filters_apply_in_order_grep_lines_head_tail(ctx: RuntimeContext) -> None:
    result = call(ctx, {"pattern": "ERROR", "start": 2, "end": 8, "first": 5, "last": 2})
    # grep: 10 lines; lines 2-8 of those: 020..080; head 5: 020..060; tail 2: 050, 060
    assert shown(result) == ["050 ERROR line 50", "060 ERROR line 60"]


def test_an_open_range_and_no_parameters_at_all(ctx: RuntimeContext) -> None:
    assert shown(call(ctx, {"start": 99})) == ["099 info line 99", "100 ERROR line 100"]
    whole = call(ctx, {})
    assert whole.content == LOG.rstrip("\n")  # every filter off: the output as it is, no note
    assert whole.details.get("output") is None or whole.details["output"]["full_output"] is None


def test_head_as_a_fixed_number(ctx: RuntimeContext) -> None:
    text = FILTERED.replace('head: "{first}"', "head: 3")
    assert shown(call(ctx, {}, text)) == ["001 info line 1", "002 info line 2", "003 info line 3"]


@pytest.mark.parametrize("pattern", ["$(touch pwned)", "'; touch pwned", "-v", "a|touch pwned"])
def test_a_hostile_pattern_is_only_a_pattern(ctx: RuntimeContext, pattern: str) -> None:
    result = call(ctx, {"pattern": pattern})
    assert result.ok, result.content
    assert shown(result) == []
    assert not (ctx.workspace / "pwned").exists()


def test_a_pattern_that_does_not_compile_is_refused_before_running(ctx: RuntimeContext) -> None:
    result = call(ctx, {"pattern": "(unclosed"})
    assert not result.ok
    assert "output.grep '(unclosed' is not a valid regular expression" in result.content


def test_a_backtracking_pattern_cannot_hold_nami(ctx: RuntimeContext) -> None:
    result = call(ctx, {"pattern": "^(a|a)*$"}, content=("a" * 40 + "!\n") * 50)
    assert result.ok
    assert "output.grep '^(a|a)*$' took too long on this output" in result.content


PODS = {"items": [{"metadata": {"name": f"web-{n}", "namespace": "prod" if n % 2 else "dev"}} for n in range(4)]}

SELECTED = """\
name: pods
description: Pods of a namespace.
risk: read
parameters: {type: object, properties: {namespace: {type: string}}, required: [namespace]}
command: [cat, log.txt]
output: {format: json, select: "items[?metadata.namespace == {namespace}].metadata.name"}
"""


def test_a_parameter_in_select_is_a_literal(ctx: RuntimeContext) -> None:
    result = call(ctx, {"namespace": "prod"}, SELECTED, json.dumps(PODS))
    assert result.value == ["web-1", "web-3"]


@pytest.mark.parametrize("value", ["prod` || `true", "prod'] | [*", "` || @ || `", "\\`", "x\" || true || \""])
def test_a_value_cannot_change_the_query(ctx: RuntimeContext, value: str) -> None:
    result = call(ctx, {"namespace": value}, SELECTED, json.dumps(PODS))
    assert result.ok, result.content
    assert result.value == []  # matches no namespace: had it become query text, it would match all


@pytest.mark.parametrize("value", ["a`b", "\\", "\\`", "``", 'q"uote', "é", 3, None, True, ["x"], {"k": "`"}])
def test_every_value_round_trips_as_a_literal(value: object) -> None:
    assert jmespath.search(jmespath_literal(value), {}) == value
    assert jmespath.search(render_select("[{v}]", {"v": value}), {}) == [value]


def test_load_checks_of_filters(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("name: t\ndescription: d\nparameters: {type: object, properties: {n: {type: integer}}}\n"
                    "command: [cat, x]\n"
                    "output: {format: json, select: 'items[?a == {missing}]', grep: '(x', head: '{nn}'}\n",
                    encoding="utf-8")
    _, problems = check_tools([path])
    messages = [f"{p.path}: {p.message}" for p in problems if p.is_error]
    assert "$.output.select: placeholder {missing} names no parameter (declared: n)" in messages
    assert any(m.startswith("$.output.grep: output.grep '(x' is not a valid regular expression") for m in messages)
    assert any(m.startswith("$.output.head: placeholder {nn} names no parameter") for m in messages), messages
    assert "$.parameters.properties.n: parameter 'n' is never used by the command or stdin" in [
        f"{p.path}: {p.message}" for p in problems]
