"""This repository's own example tools in tools/ (the ops library has its own tests, in tests/library)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nami_yaml.paths import expand_tool_paths
from nami_yaml.registry.executor import Executor
from nami_yaml.runtime import RuntimeContext
from tests.helpers import executor as executor_of

TOOLS = Path(__file__).resolve().parents[2] / "tools"


@pytest.fixture
def executor(ctx: RuntimeContext) -> Executor:
    return executor_of(ctx, expand_tool_paths(str(TOOLS), Path("/")))


def test_semver_entrypoint(executor: Executor) -> None:
    assert executor.execute("semver_bump", json.dumps({"version": "v1.4.2", "part": "minor"})).content == "v1.5.0"
    assert executor.execute("semver_bump", json.dumps({"version": "2.0.0-rc.1"})).content == "2.0.1"
    bad = executor.execute("semver_bump", json.dumps({"version": "one"}))
    assert not bad.ok and bad.content == "Error: 'one' is not a semantic version like 1.4.2"
    wrong_part = executor.execute("semver_bump", json.dumps({"version": "1.0.0", "part": "huge"}))
    assert not wrong_part.ok and "$.part" in wrong_part.content
