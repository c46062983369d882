"""A tool's ``output:``: its stdout shaped before the model reads it, run as real processes through the
executor the agent uses; the whole unshaped output kept in the saved-output file the result names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nami_yaml.result import ToolResult
from nami_yaml.runners.options import OutputShape
from nami_yaml.runners.shape import render, shape_text
from nami_yaml.runtime import RuntimeContext
from nami_yaml.spec.expressions import expression_problem
from tests.helpers import tool_executor, write

PODS = {"apiVersion": "v1", "kind": "List", "items": [
    {"metadata": {"name": f"web-{n}", "uid": f"uid-{n}", "labels": {"app": "web"}},
     "spec": {"containers": [{"name": "web", "image": "web:1", "env": [{"name": "TOKEN_HINT", "value": "x"}]}]},
     "status": {"phase": "Running" if n != 2 else "Pending", "podIP": f"10.0.0.{n}"}}
    for n in range(5)]}


def tool(output: str, command: str = "[cat, out.json]") -> str:
    return f"name: show\ndescription: Show the output.\nrisk: read\ncommand: {command}\noutput:\n{output}"


def call(ctx: RuntimeContext, output: str, stdout: str, *, command: str = "[cat, out.json]") -> ToolResult:
    write(ctx.workspace / "out.json", stdout)
    return tool_executor(ctx, tool(output, command)).execute("show", "{}")


def saved(result: ToolResult) -> str:
    path = result.details["output"]["full_output"]
    assert path is not None and path in result.content  # the model is told where the rest is
    return Path(path).read_text(encoding="utf-8")


def test_the_selected_fields_are_all_the_model_reads_and_the_whole_output_is_saved(ctx: RuntimeContext) -> None:
    raw = json.dumps(PODS, indent=4)
    result = call(ctx, "  format: json\n  select: \"items[].{name: metadata.name, phase: status.phase}\"\n", raw)
    assert result.ok
    lines = result.content.splitlines()
    assert lines[:3] == ["[", '{"name":"web-0","phase":"Running"},', '{"name":"web-1","phase":"Running"},']
    assert '{"name":"web-2","phase":"Pending"},' in lines
    for unselected in ("uid-0", "TOKEN_HINT", "10.0.0.1", "apiVersion", "labels"):
        assert unselected not in result.content
    assert lines[-1].startswith("[shaped by output.select; full output: ")
    assert saved(result) == raw  # nothing is lost
    assert result.value == [{"name": f"web-{n}", "phase": "Pending" if n == 2 else "Running"} for n in range(5)]
    assert result.details["output"]["parsed"] is True and result.details["output"]["items"] == 5


def test_max_items_cuts_the_array_and_says_how_many_were_left_out(ctx: RuntimeContext) -> None:
    result = call(ctx, "  format: json\n  select: items[].metadata.name\n  max_items: 2\n", json.dumps(PODS))
    assert result.content.splitlines()[:4] == ["[", '"web-0",', '"web-1"', "]"]
    assert "2 of 5 items shown (output.max_items)" in result.content
    assert json.loads(saved(result)) == PODS
    assert result.value == ["web-0", "web-1"] and result.details["output"]["shown"] == 2


def test_json_without_select_is_compacted_and_nothing_is_said_to_be_missing(ctx: RuntimeContext) -> None:
    result = call(ctx, "  format: json\n", json.dumps({"a": 1, "b": [1, 2]}, indent=8))
    assert result.content == '{"a":1,"b":[1,2]}'
    assert result.details["output"]["full_output"] is None  # nothing was left out, so nothing was saved


def test_output_that_is_not_json_reaches_the_model_as_text_with_one_note(ctx: RuntimeContext) -> None:
    result = call(ctx, "  format: json\n  select: items\n", "Error from server (Forbidden): pods is forbidden\n")
    assert result.content.splitlines() == [
        "Error from server (Forbidden): pods is forbidden",
        "[output.format is json, but this output is not valid JSON (Expecting value at line 1 column 1); "
        "shown as text]"]
    assert result.value is None and result.details["output"]["parsed"] is False


def test_a_failing_command_keeps_its_stderr_and_exit_code(ctx: RuntimeContext) -> None:
    result = call(ctx, "  format: json\n  select: items\n", "",
                  command="[bash, -c, 'echo no cluster >&2; exit 1']")
    assert not result.ok
    assert result.content.splitlines() == ["[stderr]", "no cluster", "[exit code: 1]"]


def test_a_select_that_fails_on_this_output_shows_it_as_text(ctx: RuntimeContext) -> None:
    result = call(ctx, "  format: json\n  select: sum(items)\n", json.dumps({"items": None}))
    assert result.content.startswith('{"items": null}\n[output.select failed on this output: In function sum()')
    assert result.content.endswith("; shown as text]")


def test_json_lines(ctx: RuntimeContext) -> None:
    rows = "\n".join(json.dumps({"Names": f"c{n}", "Labels": "x" * 200, "State": "running"}) for n in range(3))
    result = call(ctx, "  format: jsonl\n  select: \"[].{name: Names, state: State}\"\n", rows + "\n")
    assert result.value == [{"name": f"c{n}", "state": "running"} for n in range(3)]
    assert "xxxx" not in result.content
    bad = call(ctx, "  format: jsonl\n", '{"a": 1}\nnot json\n')
    assert "this output is not JSON lines: line 2 is not valid JSON" in bad.content


def test_lines_select_and_cut_a_list_of_lines(ctx: RuntimeContext) -> None:
    log = "".join(f"{'ERROR' if n % 3 == 0 else 'INFO'} event {n}\n" for n in range(30))
    result = call(ctx, "  format: lines\n  select: \"[?starts_with(@, 'ERROR')]\"\n  max_items: 4\n", log)
    assert result.content.splitlines()[:4] == ["ERROR event 0", "ERROR event 3", "ERROR event 6", "ERROR event 9"]
    assert "4 of 10 items shown" in result.content
    assert saved(result) == log


def test_output_longer_than_max_output_is_read_whole_from_its_saved_file(ctx: RuntimeContext) -> None:
    # The model would see 1,000 bytes of this (head and tail); shaping reads all of it.
    big = json.dumps({"items": [{"name": f"item-{n}", "blob": "z" * 500} for n in range(200)]})
    write(ctx.workspace / "out.json", big)
    executor = tool_executor(ctx, tool("  format: json\n  select: items[-1].name\n") + "max_output: 1000\n")
    result = executor.execute("show", "{}")
    assert result.content.splitlines()[0] == '"item-199"'
    assert saved(result) == big


def test_a_shaped_result_too_long_is_still_capped(ctx: RuntimeContext) -> None:
    listing = json.dumps([f"name-{n:05d}" for n in range(2000)])
    write(ctx.workspace / "out.json", listing)
    executor = tool_executor(ctx, tool("  format: json\n  select: \"[*]\"\n") + "max_output: 1000\n")
    result = executor.execute("show", "{}")
    assert len(result.content) < 1500 and "omitted" in result.content and result.details["truncated"]
    assert '"name-00000",' in result.content and '"name-01999"' in result.content


def test_the_value_is_checked_against_output_schema(ctx: RuntimeContext) -> None:
    schema = "  schema: {type: array, items: {type: string}}\n"
    good = call(ctx, "  format: json\n  select: items[].metadata.name\n" + schema, json.dumps(PODS))
    assert good.details["output"]["schema_errors"] == []
    bad = call(ctx, "  format: json\n  select: items[].status\n" + schema, json.dumps(PODS))
    assert bad.details["output"]["schema_errors"][0].startswith("$[0]: expected string, got object")


@pytest.mark.parametrize(("value", "form", "text"), [
    ([{"a": 1}, {"a": 2}], "json", '[\n{"a":1},\n{"a":2}\n]'),
    ([], "json", "[]"),
    ({"k": "é"}, "json", '{"k":"é"}'),
    (["one", "two"], "lines", "one\ntwo"),
    ([1, 2], "lines", "[\n1,\n2\n]"),
])
def test_render(value: object, form: str, text: str) -> None:
    assert render(value, form) == text


def test_empty_output_is_left_alone() -> None:
    shaped = shape_text("  \n", OutputShape("json", "items"))
    assert shaped.text == "  \n" and not shaped.parsed and shaped.problem is None


def test_expression_problems_name_what_is_wrong() -> None:
    assert expression_problem("items[].{name: metadata.name}") is None
    assert expression_problem("items[].{name: metadata.name") == (
        "not a valid JMESPath expression: Incomplete expression (at character 29)")
    assert "invalid token" in (expression_problem("a | | b") or "")
