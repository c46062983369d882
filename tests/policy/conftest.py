"""A project with rules, and its policy's decision on a call, through the real loader, executor and policy."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from nami_yaml.agent.hooks import Decision
from nami_yaml.app import open_project
from nami_yaml.policy.layers import build_policy
from nami_yaml.registry.executor import PreparedToolCall

KUBECTL = """\
tools:
  - name: kubectl_get
    description: Read resources.
    risk: read
    sandbox: {network: true, reads: [~/.kube]}
    parameters:
      type: object
      properties:
        verb: {type: string, enum: [get, describe, logs]}
        resource: {type: string}
        namespace: {type: string, default: default}
      required: [verb, resource]
    command: [kubectl, "{verb}", "{resource}", -n, "{namespace}"]
  - name: kubectl_change
    description: Change resources.
    risk: exec
    sandbox: {network: true, reads: [~/.kube]}
    parameters:
      type: object
      properties:
        verb: {type: string, enum: [apply, delete, scale, rollout]}
        resource: {type: string}
        namespace: {type: string, default: default}
        files: {type: array, items: {type: string}, default: []}
      required: [verb, resource]
    command: [kubectl, "{verb}", "{resource}", -n, "{namespace}"]
"""

Decide = Callable[..., Decision]


def write_project(workdir: Path, rules: str, *, builtins: str = "[bash, read_file, write_file, fetch_url]",
                  extra: str = "") -> None:
    (workdir / "tools").mkdir(exist_ok=True)
    (workdir / "tools" / "kubectl.yaml").write_text(KUBECTL)
    (workdir / "agent.yaml").write_text(f"tools: {{builtin: {builtins}, files: [tools/]}}\n{extra}rules:\n{rules}")


def decider(workdir: Path) -> Decide:
    project = open_project(cwd=workdir, trust=True, will_run=True)
    policy = build_policy(project.settings, project.registry, project.context.workspace)
    executor = project.executor()

    def decide(tool: str, **arguments: object) -> Decision:
        call = executor.prepare(tool, json.dumps(arguments))
        assert isinstance(call, PreparedToolCall), call
        return policy(call)

    return decide


@pytest.fixture
def write_rules(workdir: Path) -> Callable[..., None]:
    """``write_rules(yaml_list_text)``: the project's agent.yaml with these rules (and the kubectl tools)."""
    return lambda text, **options: write_project(workdir, text, **options)


@pytest.fixture
def rules(workdir: Path) -> Callable[[str], Decide]:
    """``rules(yaml_list_text)`` -> a function deciding calls under those rules."""

    def make(text: str, **options: str) -> Decide:
        write_project(workdir, text, **options)
        return decider(workdir)

    return make
