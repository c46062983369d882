"""The executor between the model and the tools: parse, validate, default, render, run; never raise."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from nami_yaml.errors import ToolError
from nami_yaml.registry.defaults import apply_defaults
from nami_yaml.registry.executor import Executor, PreparedToolCall
from nami_yaml.registry.loader import load_tools
from nami_yaml.registry.registry import Registry
from nami_yaml.registry.tool import Tool
from nami_yaml.runtime import RuntimeContext

TOOLS = """\
tools:
  - name: show_args
    description: Print the argv it gets as JSON.
    parameters:
      type: object
      properties:
        count: {type: integer, minimum: 1, default: 2}
        label: {type: string}
      required: [label]
    command: [PYTHON, -c, "import sys,json;print(json.dumps(sys.argv[1:]))", "--count={count}", "{label}"]
  - name: no_args
    description: Takes nothing.
    command: [PYTHON, -c, "print('done')"]
  - name: shorten
    description: Shortens text.
    parameters:
      type: object
      properties:
        text: {type: string}
        width: {type: integer, default: 12}
      required: [text]
    entrypoint: textwrap:shorten
"""


def build(folder: Path, text: str = TOOLS) -> list[Tool]:
    path = folder / "tools.yaml"
    path.write_text(text.replace("PYTHON", sys.executable), encoding="utf-8")
    tools, problems = load_tools([path])
    assert problems == []
    return tools


@pytest.fixture
def executor(ctx: RuntimeContext, tmp_path: Path) -> Executor:
    return Executor(Registry(build(tmp_path)), ctx)


def test_a_call_runs_with_defaults_applied(executor: Executor) -> None:
    result = executor.execute("show_args", '{"label": "x"}')
    assert result.ok, result.content
    assert json.loads(result.content) == ["--count=2", "x"]
    assert result.details["exit_code"] == 0


def test_unknown_tool_lists_the_available_names(executor: Executor) -> None:
    result = executor.execute("shwo_args", "{}")
    assert not result.ok
    assert result.content == "Error: unknown tool 'shwo_args'. Available tools: show_args, no_args, shorten"


def test_invalid_json_is_explained_with_an_example(executor: Executor) -> None:
    result = executor.execute("show_args", '{"label": x}')
    assert not result.ok
    assert result.content.startswith("Error: the arguments for 'show_args' are not valid JSON (")
    assert "line 1 column 11" in result.content
    assert result.content.endswith('Send one JSON object, e.g. {"label": "..."}')


@pytest.mark.parametrize(("raw", "kind"), [("[1, 2]", "array"), ('"label"', "string"), ("3", "integer")])
def test_arguments_must_be_an_object(executor: Executor, raw: str, kind: str) -> None:
    result = executor.execute("show_args", raw)
    assert result.content == (f"Error: the arguments for 'show_args' must be a JSON object, got {kind}. "
                              'Send e.g. {"label": "..."}')


def test_schema_violations_name_each_parameter(executor: Executor) -> None:
    result = executor.execute("show_args", {"label": 5, "count": 0, "colour": "red"})
    assert not result.ok
    assert result.content == (
        "Error: invalid arguments for 'show_args':\n"
        "- $: unknown parameter(s) 'colour'; known: count, label\n"
        "- $.count: 0 is less than the minimum of 1\n"
        "- $.label: expected string, got integer 5\n"
        "Fix the arguments and call again."
    )


def test_missing_required_parameter(executor: Executor) -> None:
    result = executor.execute("show_args", "{}")
    assert "- $: missing required 'label'" in result.content


@pytest.mark.parametrize("raw", ["", "   ", None, "{}"])
def test_empty_arguments_mean_no_arguments(executor: Executor, raw: str | None) -> None:
    result = executor.execute("no_args", raw)
    assert result.ok and result.content == "done"


def test_prepare_returns_a_call_that_can_be_inspected_before_running(executor: Executor, workdir: Path) -> None:
    prepared = executor.prepare("show_args", {"label": "hi", "count": 3})
    assert isinstance(prepared, PreparedToolCall)
    assert prepared.arguments == {"label": "hi", "count": 3}
    assert prepared.plan()["argv"][-2:] == ["--count=3", "hi"]
    assert prepared.plan()["cwd"] == str(workdir)
    assert "--count=3 hi" in prepared.describe()


def test_entrypoint_gets_defaults_and_plans_without_running(executor: Executor) -> None:
    prepared = executor.prepare("shorten", '{"text": "one two three four"}')
    assert isinstance(prepared, PreparedToolCall)
    plan = prepared.plan()
    assert {k: plan[k] for k in ("entrypoint", "arguments")} == {
        "entrypoint": "textwrap:shorten", "arguments": {"text": "one two three four", "width": 12}}
    assert "mode" in plan["sandbox"]  # a tool file's entry point runs in a child, sandboxed where it can be
    assert prepared.run().content == "one [...]"


def test_definitions_are_deterministic_and_in_declaration_order(ctx: RuntimeContext, tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    first = Executor(Registry(build(tmp_path / "one")), ctx)
    second = Executor(Registry(build(tmp_path / "two")), ctx)
    assert [d["function"]["name"] for d in first.definitions()] == ["show_args", "no_args", "shorten"]
    one = json.dumps(first.definitions())
    assert one == json.dumps(first.definitions())
    assert one == json.dumps(second.definitions())
    assert list(first.definitions()[0]["function"]["parameters"]["properties"]) == ["count", "label"]


def test_apply_defaults_is_recursive_and_leaves_the_input_alone() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {
        "tags": {"type": "array", "default": []},
        "opts": {"type": "object", "properties": {"depth": {"default": 1}}, "default": {}},
    }}
    given: dict[str, Any] = {"opts": {}}
    filled = apply_defaults(schema, given)
    assert filled == {"tags": [], "opts": {"depth": 1}}
    assert given == {"opts": {}}
    filled["tags"].append("x")
    assert schema["properties"]["tags"]["default"] == [], "defaults must be copied, not shared between calls"


@dataclass
class _Exploding:
    def describe(self) -> str:
        return "boom"

    def plan(self) -> dict[str, Any]:
        return {}

    def run(self) -> Any:
        raise KeyError("lost")


@dataclass(frozen=True)
class _Runner:
    failure: Exception | None = None
    kind = "test"

    def invocation(self, tool: str, args: dict[str, Any], ctx: RuntimeContext) -> Any:
        if self.failure is not None:
            raise self.failure
        return _Exploding()


def _tool(name: str, runner: Any) -> Tool:
    return Tool(name, "d", {"type": "object", "properties": {}}, "read", runner, "x.yaml:1:1")


def test_runner_failures_become_results_never_exceptions(ctx: RuntimeContext) -> None:
    registry = Registry([_tool("clean", _Runner(ToolError("no such branch"))), _tool("buggy", _Runner(OSError("disk"))),
                         _tool("late", _Runner())])
    executor = Executor(registry, ctx)
    assert executor.execute("clean", "{}").content == "Error: clean: no such branch"
    assert executor.execute("buggy", "{}").content == "Error: buggy: OSError: disk"
    late = executor.execute("late", "{}")
    assert not late.ok and late.content == "Error: KeyError: 'lost'"


def test_registry_refuses_duplicates_and_keeps_order() -> None:
    a, b = _tool("a", _Runner()), _tool("b", _Runner())
    registry = Registry([b, a])
    assert registry.names() == ["b", "a"]
    assert len(registry) == 2 and "a" in registry and "c" not in registry
    assert registry.get("a") is a and registry.get("c") is None
    with pytest.raises(ValueError, match="duplicate tool name 'a'"):
        Registry([a, a])


NESTED = """\
name: nested
description: Object parameters.
parameters:
  type: object
  properties:
    opts:
      type: object
      properties: {dry: {type: boolean}}
      additionalProperties: false
    meta: {type: object, additionalProperties: {type: string}}
entrypoint: json:dumps
"""


def test_unknown_keys_of_a_nested_object_name_that_objects_keys(ctx: RuntimeContext, tmp_path: Path) -> None:
    executor = Executor(Registry(build(tmp_path, NESTED)), ctx)
    result = executor.execute("nested", {"opts": {"wet": 1, "dry": True}, "meta": {"a": 5}, "zz": 1})
    assert result.content.splitlines()[1:4] == [
        "- $: unknown parameter(s) 'zz'; known: opts, meta",
        "- $.meta.a: expected string, got integer 5",
        "- $.opts: unknown parameter(s) 'wet'; known: dry",
    ]


SLEEPERS = """\
tools:
  - name: sleeper
    description: Sleeps.
    risk: read
    parameters:
      type: object
      properties:
        label: {type: string}
      required: [label]
    command: [PYTHON, -c, "import time,sys; time.sleep(30); print(sys.argv[1])", "{label}"]
"""


def test_cancelling_one_call_leaves_the_others_running(ctx: RuntimeContext, tmp_path: Path) -> None:
    import threading
    import time

    executor = Executor(Registry(build(tmp_path, SLEEPERS)), ctx)
    first, second = (executor.prepare("sleeper", {"label": x}) for x in ("a", "b"))
    assert isinstance(first, PreparedToolCall) and isinstance(second, PreparedToolCall)
    results: dict[str, Any] = {}
    threads = [threading.Thread(target=lambda c=c, k=k: results.__setitem__(k, c.run())) for k, c in
               (("a", first), ("b", second))]
    for thread in threads:
        thread.start()
    time.sleep(0.5)
    first.cancel()
    threads[0].join(timeout=10)
    assert not threads[0].is_alive() and results["a"].details["interrupted"] is True
    assert threads[1].is_alive()  # the other call goes on
    ctx.cancel.set()  # cancelling the run cancels every call in it
    threads[1].join(timeout=10)
    assert not threads[1].is_alive() and results["b"].details["interrupted"] is True


def test_each_tool_s_validator_is_compiled_once(executor: Executor, monkeypatch: pytest.MonkeyPatch) -> None:
    """Compiling a JSON Schema validator costs more than validating: once per tool, not per call."""
    from nami_yaml.registry import executor as executor_module

    compiled: list[dict[str, Any]] = []
    real = executor_module.argument_validator

    def counting(schema: dict[str, Any]) -> Any:
        compiled.append(schema)
        return real(schema)

    monkeypatch.setattr(executor_module, "argument_validator", counting)
    for n in range(5):
        assert isinstance(executor.prepare("show_args", {"label": f"run {n}"}), PreparedToolCall)
        assert not isinstance(executor.prepare("show_args", {"count": 0}), PreparedToolCall)  # still checked
        assert isinstance(executor.prepare("no_args", "{}"), PreparedToolCall)
    assert [schema.get("required") for schema in compiled] == [["label"], None]
