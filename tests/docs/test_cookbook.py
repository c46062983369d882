"""What docs/cookbook.md says its tools run is what they run (rendered by the executor, nothing started)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from nami_yaml.registry.executor import Executor, PreparedToolCall
from nami_yaml.registry.loader import load_tools
from nami_yaml.registry.registry import Registry
from nami_yaml.runtime import RuntimeContext

DOC = Path(__file__).resolve().parents[2] / "docs" / "cookbook.md"
BLOCK = re.compile(r"^```yaml\n(.*?)^```", re.S | re.M)


def tool_blocks() -> list[str]:
    return [b for b in BLOCK.findall(DOC.read_text(encoding="utf-8")) if not b.startswith("rules:")]


@pytest.fixture
def cookbook(tmp_path: Path, ctx: RuntimeContext) -> Executor:
    tools = []
    for index, block in enumerate(tool_blocks()):
        file = tmp_path / f"block{index}.yaml"
        file.write_text(block, encoding="utf-8")
        loaded, problems = load_tools([file])
        assert problems == []
        tools.extend(loaded)
    latest = {tool.name: tool for tool in tools}  # the page refines kubectl_pods: the last version counts
    return Executor(Registry(latest.values()), ctx)


def argv(executor: Executor, tool: str, **arguments: object) -> list[str]:
    prepared = executor.prepare(tool, json.dumps(arguments))
    assert isinstance(prepared, PreparedToolCall), prepared
    return prepared.plan()["argv"]


def test_the_commands_the_page_shows(cookbook: Executor) -> None:
    assert argv(cookbook, "kubectl_pods", namespace="shop", output="wide") == [
        "kubectl", "get", "pods", "-o", "wide", "--namespace", "shop"]
    assert argv(cookbook, "kubectl_diff_files", paths=["k8s/web.yaml", "k8s/db/"]) == [
        "kubectl", "diff", "-f", "k8s/web.yaml", "-f", "k8s/db/"]
    assert argv(cookbook, "kubectl_delete", kind="pod", name="web-1", namespace="dev") == [
        "kubectl", "delete", "pod", "web-1", "--namespace", "dev", "--wait=false"]
    assert argv(cookbook, "manifests_changed", paths=["-odd.yaml"])[-2:] == ["--", "-odd.yaml"]


@pytest.mark.parametrize(("tool", "arguments", "reason"), [
    ("kubectl_pods", {"name": "--kubeconfig=/tmp/evil"}, "$.name"),
    ("kubectl_pods", {"namespace": "kube-system; rm -rf /"}, "$.namespace"),
    ("kubectl_diff_files", {"paths": ["https://example.com/x.yaml"]}, "$.paths[0]"),
    ("kubectl_pods_eks", {"namespace": "-A"}, "$.namespace"),
    ("manifests_changed", {"since": "--output=/tmp/x"}, "starts with '-'"),
])
def test_what_the_page_says_is_refused(cookbook: Executor, tool: str, arguments: dict[str, object],
                                       reason: str) -> None:
    refused = cookbook.prepare(tool, json.dumps(arguments))
    assert not isinstance(refused, PreparedToolCall)
    assert reason in refused.content


def test_the_delete_rules_deny_outside_dev_and_preview_and_ask_inside(workdir: Path) -> None:
    from nami_yaml import Agent
    from nami_yaml.testing import ScriptedModel, call, text, tool_calls

    [rules] = [b for b in BLOCK.findall(DOC.read_text(encoding="utf-8")) if b.startswith("rules:")]
    [delete_tool] = [b for b in tool_blocks() if "name: kubectl_delete" in b]
    (workdir / "delete.yaml").write_text(delete_tool)
    (workdir / "agent.yaml").write_text("tools: {builtin: [], files: [delete.yaml]}\n" + rules)
    model = ScriptedModel([tool_calls(*(call("kubectl_delete", {"kind": "pod", "name": "web-1", "namespace": ns})
                                        for ns in ("prod", "preview-42", "dev"))), text("done")])
    Agent.from_config(client=model, trust=True).run("clean up")
    prod, preview, dev = (m["content"] for m in model.requests[1]["messages"] if m["role"] == "tool")
    assert prod.startswith("Denied by rule agent.yaml:3:5: kubectl delete pod web-1 --namespace prod")
    assert "Reason: deletes only in dev and preview namespaces." in prod
    for asked in (preview, dev):  # asked, and with nobody to ask (no terminal), refused as such
        assert asked.startswith("Denied by no approver: kubectl delete pod web-1") and "rule agent.yaml:7:5 asks" in asked



def test_the_page_s_tools_declare_what_their_sandbox_needs(tmp_path: Path) -> None:
    """`nami check` has nothing to say about them: the first one already shows kubectl's sandbox lines."""
    from nami_yaml.errors import SpecError
    from nami_yaml.registry.draft import Host
    from nami_yaml.registry.loader import check_tools
    from tests.helpers import fake_programs

    host = Host(tmp_path, fake_programs(tmp_path / "bin", "kubectl", "git", "jq", "sort", "uniq"))
    files = []
    for index, block in enumerate(tool_blocks()):
        files.append(tmp_path / f"block{index}.yaml")
        files[-1].write_text(block, encoding="utf-8")
    assert "sandbox: {network: true, reads: [~/.kube]}" in tool_blocks()[0]
    for file in files:  # one at a time: the page defines kubectl_pods twice
        _, problems = check_tools([file], host=host)
        assert [str(p) for p in SpecError(problems).problems] == []
