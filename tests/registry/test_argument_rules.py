"""Argument checks that Python's defaults would get wrong: NaN/Infinity, and ``$`` in patterns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nami_yaml.registry.executor import Executor, PreparedToolCall
from nami_yaml.registry.loader import load_tools
from nami_yaml.registry.registry import Registry
from nami_yaml.runtime import RuntimeContext
from tests.helpers import executor as executor_of
from tests.helpers import write

TOOL = """\
name: scale
description: Scale a deployment.
risk: exec
parameters:
  type: object
  properties:
    unit: {type: string, pattern: "^[A-Za-z0-9@._-]+$"}
    replicas: {type: number, minimum: 0, maximum: 10}
  required: [unit, replicas]
command: [echo, "{unit}", "--replicas={replicas}"]
"""


@pytest.fixture
def executor(tmp_path: Path, ctx: RuntimeContext) -> Executor:
    return executor_of(ctx, [write(tmp_path / "scale.yaml", TOOL)])


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_json_numbers_are_refused(executor: Executor, constant: str) -> None:
    result = executor.prepare("scale", f'{{"unit": "web", "replicas": {constant}}}')
    assert not isinstance(result, PreparedToolCall)
    assert f"{constant} is not a JSON number" in result.content


def test_dollar_means_end_of_text(executor: Executor) -> None:
    refused = executor.prepare("scale", json.dumps({"unit": "nginx\n", "replicas": 1}))
    assert not isinstance(refused, PreparedToolCall)
    assert "$.unit" in refused.content
    accepted = executor.prepare("scale", json.dumps({"unit": "nginx.service", "replicas": 1}))
    assert isinstance(accepted, PreparedToolCall)
    assert accepted.plan()["argv"] == ["echo", "nginx.service", "--replicas=1"]


def test_overflowing_numbers_are_refused(executor: Executor) -> None:
    result = executor.prepare("scale", '{"unit": "web", "replicas": 1e400}')
    assert not isinstance(result, PreparedToolCall)
    assert "1e400 is not a finite number" in result.content


@pytest.mark.parametrize(("pattern", "good", "bad"), [
    ("^[]$a]+$", "a$]", "a\n"),
    ("^[^]$]+$", "abc", "a]"),
    (r"^a\$$", "a$", "a$\n"),
])
def test_dollar_inside_classes_and_escapes_keeps_its_meaning(tmp_path: Path, ctx: RuntimeContext, pattern: str,
                                                             good: str, bad: str) -> None:
    (tmp_path / "p.yaml").write_text(
        "name: p\ndescription: d\nparameters:\n  type: object\n  properties:\n"
        f"    v: {{type: string, pattern: {json.dumps(pattern)}}}\n  required: [v]\ncommand: [echo, \"{{v}}\"]\n")
    tools, problems = load_tools([tmp_path / "p.yaml"])
    assert problems == []
    executor = Executor(Registry(tools), ctx)
    assert isinstance(executor.prepare("p", json.dumps({"v": good})), PreparedToolCall)
    refused = executor.prepare("p", json.dumps({"v": bad}))
    assert not isinstance(refused, PreparedToolCall) and "does not match" in refused.content
