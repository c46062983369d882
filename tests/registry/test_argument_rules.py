"""Argument checks that Python's defaults would get wrong: NaN/Infinity, and ``$`` in patterns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nami_yaml.registry.executor import Executor, PreparedCall
from nami_yaml.registry.loader import load_tools
from nami_yaml.registry.registry import Registry
from nami_yaml.runtime import RuntimeContext

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
    (tmp_path / "scale.yaml").write_text(TOOL)
    tools, problems = load_tools([tmp_path / "scale.yaml"])
    assert problems == []
    return Executor(Registry(tools), ctx)


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_json_numbers_are_refused(executor: Executor, constant: str) -> None:
    result = executor.prepare("scale", f'{{"unit": "web", "replicas": {constant}}}')
    assert not isinstance(result, PreparedCall)
    assert f"{constant} is not a JSON number" in result.content


def test_dollar_means_end_of_text(executor: Executor) -> None:
    refused = executor.prepare("scale", json.dumps({"unit": "nginx\n", "replicas": 1}))
    assert not isinstance(refused, PreparedCall)
    assert "$.unit" in refused.content
    accepted = executor.prepare("scale", json.dumps({"unit": "nginx.service", "replicas": 1}))
    assert isinstance(accepted, PreparedCall)
    assert accepted.plan()["argv"] == ["echo", "nginx.service", "--replicas=1"]
