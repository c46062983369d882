"""What the library refuses before anything starts (option injection, URLs, paths leaving the workspace), and
what reaches the programs it starts (secrets only where a tool lists them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.library.conftest import LibraryRunner, Stubs

REFUSED: list[tuple[str, dict[str, Any], str]] = [
    # a value that would start an argv element with "-" is an option smuggled in
    ("git_log", {"revision": "--output=/tmp/stolen"}, "starts with '-'"),
    ("git_show", {"revision": "--output=/tmp/stolen"}, "starts with '-'"),
    ("git_diff", {"base": "--output=/tmp/stolen"}, "starts with '-'"),
    ("git_blame", {"path": "a.py", "revision": "--contents=/etc/passwd"}, "starts with '-'"),
    ("git_branch", {"patterns": ["-D"]}, "starts with '-'"),
    ("git_branch", {"contains": "--set-upstream-to=x"}, "starts with '-'"),
    # the cluster is the target's (agent.yaml targets:) or the kubeconfig's, never a string the model writes
    ("kubectl_get", {"kind": "pods", "context": "--kubeconfig=/tmp/evil"}, "unknown parameter(s) 'context'"),
    ("kubectl_apply", {"paths": ["k8s/"], "context": "prod-eu"}, "unknown parameter(s) 'context'"),
    ("kubectl_get", {"kind": "pods", "selector": "--raw=/api"}, "starts with '-'"),
    ("kubectl_logs", {"pod": "web", "container": "--follow"}, "starts with '-'"),
    ("docker_ps", {"filters": ["--format={{.Names}}"]}, "starts with '-'"),
    ("systemd_status", {"units": ["--all"]}, "starts with '-'"),
    ("systemd_journal", {"units": ["-f"]}, "starts with '-'"),
    ("terraform_plan", {"targets": ["-lock=false"]}, "starts with '-'"),
    ("helm_list", {"kube_context": "--kubeconfig=/tmp/x"}, "unknown parameter(s) 'kube_context'"),
    ("jq_filter", {"filter": "-n", "json": "{}"}, "starts with '-'"),
    ("system_disk_free", {"types": ["-a"]}, "$.types[0]"),
    # the schema's patterns and enums
    ("kubectl_get", {"kind": "secrets"}, "$.kind"),
    ("kubectl_get", {"kind": "pods", "name": "web/../x"}, "$.name"),
    ("kubectl_get", {"kind": "pods", "namespace": "-A"}, "$.namespace"),
    ("kubectl_logs", {"pod": "web", "since": "yesterday"}, "$.since"),
    ("kubectl_apply", {"paths": ["https://example.com/evil.yaml"]}, "$.paths[0]"),
    ("kubectl_apply", {"paths": ["-"]}, "starts with '-'"),
    ("kubectl_apply", {"paths": []}, "$.paths"),
    ("kubectl_diff", {"paths": ["HTTP://example.com/x.yaml"]}, "$.paths[0]"),
    ("kubectl_scale", {"name": "web", "replicas": -1}, "$.replicas"),
    ("kubectl_events", {"types": ["Error"]}, "$.types[0]"),
    ("docker_logs", {"container": "-f"}, "$.container"),
    ("docker_inspect", {"targets": []}, "$.targets"),
    ("terraform_plan", {"dir": "../other"}, "$.dir"),
    ("terraform_apply", {"dir": "/etc"}, "$.dir"),
    ("terraform_fmt", {"dir": "infra/../../x"}, "$.dir"),
    ("terraform_validate", {"dir": "~/infra"}, "$.dir"),
    ("http_probe", {"url": "file:///etc/passwd"}, "$.url"),
    ("http_probe", {"url": "https://example.com", "headers": ["X: a\r\nHost: evil"]}, "$.headers[0]"),
    ("http_probe", {"url": "https://example.com", "method": "DELETE"}, "$.method"),
    ("git_blame", {"path": "a.py", "lines": "1-5"}, "$.lines"),
    ("system_processes", {"user": "$(id)"}, "$.user"),
    ("git_diff", {"head": "HEAD"}, "base"),
]


@pytest.mark.parametrize(("tool", "arguments", "message"), REFUSED,
                         ids=[f"{t}-{'-'.join(a)}" for t, a, _ in REFUSED])
def test_refused_before_anything_runs(library: LibraryRunner, stubs: Stubs, tool: str, arguments: dict[str, Any],
                                      message: str) -> None:
    result = library(tool, **arguments)
    assert not result.ok
    assert message in result.content
    assert stubs.calls() == []


def test_a_script_value_is_never_code(library: LibraryRunner, stubs: Stubs, workdir: Path) -> None:
    (workdir / "$(touch pwned)").mkdir()
    result = library("system_disk_usage", path="$(touch pwned)")
    assert result.ok, result.content
    assert stubs.only_call().argv[-1] == "$(touch pwned)"
    assert not (workdir / "pwned").exists()


def test_disk_usage_of_a_missing_folder_fails_clearly(library: LibraryRunner, stubs: Stubs) -> None:
    result = library("system_disk_usage", path="nowhere")
    assert not result.ok
    assert "no such file or folder: nowhere" in result.content
    assert stubs.calls() == []


@pytest.fixture
def host_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret")
    monkeypatch.setenv("GITHUB_TOKEN", "gh-token")
    monkeypatch.setenv("KUBECONFIG", "/home/ann/.kube/prod")


def test_secrets_reach_only_the_tools_that_list_them(host_secrets: None, library: LibraryRunner,
                                                     stubs: Stubs) -> None:
    assert library("terraform_plan").ok
    terraform = stubs.only_call().env
    assert terraform["AWS_SECRET_ACCESS_KEY"] == "aws-secret"
    assert "GITHUB_TOKEN" not in terraform
    assert terraform["TF_IN_AUTOMATION"] == "1"
    stubs.clear()
    assert library("kubectl_get", kind="pods").ok
    kubectl = stubs.only_call().env
    assert "AWS_SECRET_ACCESS_KEY" not in kubectl and "GITHUB_TOKEN" not in kubectl
    assert kubectl["KUBECONFIG"] == "/home/ann/.kube/prod"  # a path, not a secret
