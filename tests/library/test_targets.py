"""The library's kubectl, helm and terraform tools in a project with targets: the model chooses among the
target names, the call runs with that target's env (KUBECONFIG, TF_WORKSPACE) and its vars fill
``--context`` and ``-var-file``; pinned, the choice is gone and every call runs on the pinned target."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from nami_yaml.runtime import RuntimeContext
from tests.library.conftest import TARGETS, LibraryRunner, Stubs, all_library_tools

TARGETED = ["kubectl_apply", "kubectl_describe", "kubectl_diff", "kubectl_events", "kubectl_get", "kubectl_logs",
            "kubectl_pods", "kubectl_rollout_history", "kubectl_rollout_restart", "kubectl_rollout_status", "kubectl_rollout_undo",
            "kubectl_scale", "kubectl_top", "helm_history", "helm_list", "helm_status", "terraform_apply",
            "terraform_plan", "terraform_show"]

# (tool, arguments, the command, the variables it must see)
CASES: list[tuple[str, dict[str, Any], list[Any], dict[str, str]]] = [
    ("kubectl_get", {"kind": "pods", "target": "prod"}, ["kubectl", "get", "pods", "--context", "prod-eu"],
     {"KUBECONFIG": "/kube/prod.yaml", "NAMI_TARGET": "prod", "NAMI_TARGET_CONTEXT": "prod-eu"}),
    ("kubectl_logs", {"pod": "web-1", "target": "dev", "namespace": "shop"},
     ["kubectl", "logs", "web-1", "--tail=200", "--namespace", "shop", "--context", "dev-eu"],
     {"KUBECONFIG": "/kube/dev.yaml"}),
    ("kubectl_apply", {"paths": ["k8s/"], "target": "prod"},
     ["kubectl", "apply", "-f", "k8s/", "--dry-run=none", "--context", "prod-eu"], {"KUBECONFIG": "/kube/prod.yaml"}),
    ("helm_status", {"release": "web", "target": "prod"},
     ["helm", "status", "web", "--output=table", "--kube-context", "prod-eu"], {"KUBECONFIG": "/kube/prod.yaml"}),
    ("terraform_plan", {"dir": "infra", "target": "prod"},
     ["terraform", "-chdir=infra", "plan", "-input=false", "-no-color", "-lock-timeout=60s", "-refresh=true",
      "-var-file", "prod.tfvars"], {"TF_WORKSPACE": "prod", "TF_IN_AUTOMATION": "1"}),
    # dev has no var_file: its group is left out
    ("terraform_plan", {"dir": "infra", "target": "dev"},
     ["terraform", "-chdir=infra", "plan", "-input=false", "-no-color", "-lock-timeout=60s", "-refresh=true"],
     {"TF_WORKSPACE": "dev"}),
    # the variable files shape its plan step's plan; the apply applies that plan file, on the same target
    ("terraform_apply", {"target": "prod", "var_files": ["extra.tfvars"]},
     [["terraform", "-chdir=.", "plan", "-input=false", "-no-color", "-lock-timeout=60s", "-out={plan_file}",
       "-var-file", "prod.tfvars", "-var-file", "extra.tfvars"],
      ["terraform", "-chdir=.", "apply", "-input=false", "-no-color", "-lock-timeout=60s", "{sealed plan_file}"]],
     {"TF_WORKSPACE": "prod"}),
]


@pytest.mark.parametrize(("tool", "arguments", "expected", "env"), CASES, ids=[f"{c[0]}-{c[1]['target']}" for c in CASES])
def test_a_call_runs_with_its_targets_env_and_vars(library_on_targets: LibraryRunner, stubs: Stubs, tool: str,
                                                   arguments: dict[str, Any], expected: list[str],
                                                   env: dict[str, str]) -> None:
    result = library_on_targets(tool, **arguments)
    assert result.ok, result.content
    if isinstance(expected[0], list):  # a plan step, then the tool: both on the target
        assert stubs.commands() == expected
        assert all({name: call.env.get(name) for name in env} == env for call in stubs.calls())
        return
    call = stubs.only_call()
    assert call.command == expected
    assert {name: call.env.get(name) for name in env} == env


def test_the_ops_tools_offer_the_target_names_and_the_others_do_not() -> None:
    registry = all_library_tools(TARGETS)
    offered = sorted(tool.name for tool in registry if "target" in tool.parameters["properties"])
    assert offered == sorted(TARGETED)
    schema = registry.get("kubectl_get").parameters  # type: ignore[union-attr]
    assert schema["properties"]["target"]["enum"] == ["dev", "prod"]
    assert "target" in schema["required"]
    plain = all_library_tools()  # a project without targets: as before, on the kubeconfig's current context
    assert not any("target" in tool.parameters["properties"] for tool in plain)


def test_a_call_must_name_a_target_the_project_has(library_on_targets: LibraryRunner, stubs: Stubs) -> None:
    missing = library_on_targets("kubectl_get", kind="pods")
    assert not missing.ok and "missing required 'target'" in missing.content
    unknown = library_on_targets("kubectl_get", kind="pods", target="staging")
    assert not unknown.ok and '"staging" is not one of: "dev", "prod"' in unknown.content
    assert stubs.calls() == []


def test_pinned_the_model_is_not_offered_the_choice(workdir: Path, temp_home: Path, stubs: Stubs) -> None:
    ctx = RuntimeContext(workspace=workdir, host_env=dict(os.environ), spill_dir=temp_home / "spill",
                         sandbox=stubs.sandbox())
    pinned = LibraryRunner(ctx, replace(TARGETS, pinned="prod"))
    assert "target" not in pinned.executor.registry.get("kubectl_get").parameters["properties"]  # type: ignore[union-attr]
    result = pinned("kubectl_get", kind="pods")
    assert result.ok, result.content
    call = stubs.only_call()
    assert call.command[-2:] == ["--context", "prod-eu"] and call.env["KUBECONFIG"] == "/kube/prod.yaml"
    stubs.clear()
    chosen = pinned("kubectl_get", kind="pods", target="dev")
    assert not chosen.ok and "unknown parameter(s) 'target'" in chosen.content
    assert stubs.calls() == []
