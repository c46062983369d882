"""Schema patterns run on a backtracking engine: a catastrophic pattern with a long value must not hold nami.

Each attack runs in a child process with a deadline, so a regression shows as a failure, not a hung suite.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from nami_yaml.registry.executor import Executor, PreparedToolCall
from nami_yaml.registry.registry import Registry
from nami_yaml.registry.tool import Tool
from nami_yaml.runners.command import CommandRunner
from nami_yaml.runners.options import ProcessOptions
from nami_yaml.runtime import RuntimeContext

EVIL = "^([a-z]+)+$"
LONG = "a" * 40 + "!"

CHILD = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    from nami_yaml.registry.executor import Executor
    from nami_yaml.registry.registry import Registry
    from nami_yaml.registry.tool import Tool
    from nami_yaml.runners.base import ProcessOptions
    from nami_yaml.runners.command import CommandRunner
    from nami_yaml.runtime import RuntimeContext
    parameters, arguments = json.loads(sys.argv[1]), json.loads(sys.argv[2])
    tool = Tool("t", "d", parameters, "read", CommandRunner(["true"], ProcessOptions()), "t.yaml:1:1")
    ctx = RuntimeContext(workspace=Path.cwd(), spill_dir=Path.cwd() / "spill")
    started = time.monotonic()
    outcome = Executor(Registry([tool]), ctx).prepare("t", arguments)
    print(json.dumps({"seconds": time.monotonic() - started, "content": getattr(outcome, "content", None)}))
""")


def _prepare_in_child(parameters: dict[str, Any], arguments: dict[str, Any], tmp_path: Any) -> dict[str, Any]:
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(parameters), json.dumps(arguments)],
                              capture_output=True, text=True, timeout=20, cwd=tmp_path)
    except subprocess.TimeoutExpired:
        pytest.fail("validating the arguments did not finish within 20 s")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


ALSO_EVIL = "^(a|a)*$"  # backtracks in both engines: only the time budget stops it


@pytest.mark.parametrize("parameters, arguments", [
    ({"type": "object", "properties": {"x": {"type": "string", "pattern": EVIL}}}, {"x": LONG}),
    ({"type": "object", "properties": {"x": {"type": "string", "pattern": ALSO_EVIL}}}, {"x": LONG}),
    ({"type": "object", "patternProperties": {ALSO_EVIL: {"type": "string"}}}, {LONG: "v"}),
    ({"type": "object", "patternProperties": {EVIL: {"type": "string"}}, "additionalProperties": False},
     {LONG: "v"}),
    ({"type": "object", "patternProperties": {ALSO_EVIL: {}}, "unevaluatedProperties": False}, {LONG: "v"}),
    ({"type": "object", "properties": {"x": {"type": "array", "items": {"type": "string", "pattern": ALSO_EVIL}}}},
     {"x": ["a" * 30 + "!"] * 50}),
    ({"type": "object", "properties": {"x": {"type": "object", "propertyNames": {"pattern": EVIL}}}},
     {"x": {LONG: 1}}),
], ids=["pattern", "pattern-both-engines", "patternProperties-both-engines",
        "additionalProperties", "unevaluatedProperties", "many-values", "propertyNames"])
def test_a_catastrophic_pattern_is_cut_off(parameters: dict[str, Any], arguments: dict[str, Any],
                                            tmp_path: Any) -> None:
    reply = _prepare_in_child(parameters, arguments, tmp_path)
    # Whether the engine proves the mismatch quickly or the budget runs out, the call is refused.
    assert reply["content"] is not None and reply["content"].startswith("Error: invalid arguments for 't'")


def _tool(parameters: dict[str, Any]) -> Tool:
    return Tool("t", "d", parameters, "read", CommandRunner(["true"], ProcessOptions()), "t.yaml:1:1")


def _prepare(ctx: RuntimeContext, parameters: dict[str, Any], arguments: dict[str, Any]) -> Any:
    return Executor(Registry([_tool(parameters)]), ctx).prepare("t", arguments)


def test_the_time_limit_is_reported_for_the_model(ctx: RuntimeContext) -> None:
    outcome = _prepare(ctx, {"type": "object", "properties": {"x": {"type": "string", "pattern": "^(a|aa)+$"}}},
                       {"x": "a" * 5000 + "!"})
    assert not isinstance(outcome, PreparedToolCall)
    assert "could not be checked against the pattern '^(a|aa)+$' in time" in outcome.content


@pytest.mark.parametrize("schema, good, bad", [
    ({"pattern": "^[a-z]+$"}, "nginx", "nginx\n"),
    ({"pattern": "^[^$]+$"}, "a", "a$"),
    ({"pattern": r"\d{3}"}, "x123", "x12"),
])
def test_patterns_keep_their_meaning(ctx: RuntimeContext, schema: dict[str, Any], good: str, bad: str) -> None:
    parameters = {"type": "object", "properties": {"x": {"type": "string", **schema}}}
    assert isinstance(_prepare(ctx, parameters, {"x": good}), PreparedToolCall)
    assert not isinstance(_prepare(ctx, parameters, {"x": bad}), PreparedToolCall)


def test_pattern_properties_and_unevaluated_properties_keep_their_meaning(ctx: RuntimeContext) -> None:
    parameters = {"type": "object", "properties": {"a": {}}, "patternProperties": {"^x_": {"type": "integer"}},
                  "additionalProperties": False}
    assert isinstance(_prepare(ctx, parameters, {"a": 1, "x_1": 2}), PreparedToolCall)
    refused = _prepare(ctx, parameters, {"a": 1, "x_1": "two", "y": 3})
    assert "unknown parameter(s) 'y'" in refused.content and "$.x_1: expected integer" in refused.content
    loose = {"type": "object", "allOf": [{"properties": {"a": {}}}, {"patternProperties": {"^x_": {}}}],
             "unevaluatedProperties": False}
    assert isinstance(_prepare(ctx, loose, {"a": 1, "x_1": 2}), PreparedToolCall)
    assert "y" in _prepare(ctx, loose, {"a": 1, "y": 2}).content


def test_a_broken_pattern_blames_the_tool(ctx: RuntimeContext) -> None:
    outcome = _prepare(ctx, {"type": "object", "properties": {"x": {"type": "string", "pattern": "(unclosed"}}},
                       {"x": "a"})
    assert "the tool's pattern '(unclosed' is not a valid regular expression" in outcome.content
