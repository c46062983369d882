"""The library tools that shape their output (`output:`), run over stubs that print the recorded samples
(`nami_yaml/library/*/samples/`), and terraform_show over the real terraform where this machine has it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from nami_yaml.registry.library import library_sample, shaping_samples
from tests.library.conftest import LibraryRunner, Stubs, all_library_tools
from tests.programs import needs


def sample(tool: str) -> str:
    path = library_sample(tool)
    assert path is not None, tool
    return path.read_text(encoding="utf-8")


def full_output(content: str) -> str:
    return Path(content.rsplit("full output: ", 1)[1].split("]", 1)[0]).read_text(encoding="utf-8")


def test_kubectl_pods_reads_the_status_a_diagnosis_starts_from(library: LibraryRunner, stubs: Stubs) -> None:
    stubs.add("kubectl", stdout=sample("kubectl_pods"))
    result = library("kubectl_pods", namespace="shop")
    assert result.ok, result.content
    assert stubs.only_call().command == ["kubectl", "get", "pods", "-o", "json", "--namespace", "shop"]
    pods = {pod["name"]: pod for pod in result.value}
    assert len(pods) == 8
    worker = pods["worker-5f4c7d8b9-zk2lm"]
    assert (worker["ready"], worker["restarts"]) == ("0/1", 27)
    assert worker["waiting"] == [{"container": "worker", "reason": "CrashLoopBackOff"}]
    assert worker["last_stop"] == [{"container": "worker", "reason": "Error", "exit_code": 1}]
    assert pods["api-6c8d9f7b44-h7v2c"]["last_stop"][0]["reason"] == "OOMKilled"
    assert pods["migrate-29158930-8xk4d"]["phase"] == "Succeeded"
    for left_out in ("DATABASE_URL", "livenessProbe", "containerID", "kube-api-access", "tolerations"):
        assert left_out not in result.content
    assert result.details["output"]["schema_errors"] == []
    assert full_output(result.content) == sample("kubectl_pods")


def test_a_pending_pod_without_container_statuses_is_still_shaped(library: LibraryRunner, stubs: Stubs) -> None:
    pending = {"items": [{"metadata": {"name": "new-1", "namespace": "shop"}, "spec": {"containers": [{"name": "a"}]},
                          "status": {"phase": "Pending"}}]}
    stubs.add("kubectl", stdout=json.dumps(pending))
    result = library("kubectl_pods")
    assert result.value == [{"name": "new-1", "namespace": "shop", "phase": "Pending", "ready": "0/1", "restarts": 0,
                             "node": None, "started": None, "waiting": None, "last_stop": None}]


def test_docker_containers_reads_json_lines(library: LibraryRunner, stubs: Stubs) -> None:
    stubs.add("docker", stdout=sample("docker_containers"))
    result = library("docker_containers", all=True)
    assert result.ok, result.content
    assert [c["name"] for c in result.value][:3] == ["shop-web-1", "shop-api-1", "shop-worker-1"]
    assert result.value[2]["state"] == "restarting"
    assert "com.docker.compose" not in result.content
    assert full_output(result.content) == sample("docker_containers")


def test_a_cli_error_reaches_the_model_as_it_is(library: LibraryRunner, stubs: Stubs) -> None:
    stubs.add("docker", stdout="Cannot connect to the Docker daemon at unix:///var/run/docker.sock.\n", exit_code=1)
    result = library("docker_containers")
    assert not result.ok
    assert result.content.startswith("Cannot connect to the Docker daemon")
    assert "is not JSON lines" in result.content and "[exit code: 1]" in result.content


def test_every_shaping_tool_has_a_sample_and_shrinks_it() -> None:
    shaping = [tool.name for tool in all_library_tools() if tool.output is not None]
    assert sorted(shaping) == ["docker_containers", "kubectl_pods", "terraform_show"]
    measured = {s.tool: s for s in shaping_samples(all_library_tools())}
    assert sorted(measured) == sorted(shaping)
    for found in measured.values():
        assert found.after * 5 < found.before, found  # at least five times smaller on a typical result


@needs("terraform")
def test_terraform_show_lists_the_resources_of_the_state(real_library: LibraryRunner, workdir: Path) -> None:
    infra = workdir / "infra"
    infra.mkdir()
    (infra / "main.tf").write_text('resource "terraform_data" "web" {\n  input = {secret = "s3cr3t"}\n}\n'
                                   'module "net" {\n  source = "./net"\n}\n')
    (infra / "net").mkdir()
    (infra / "net" / "main.tf").write_text('resource "terraform_data" "vpc" {\n  input = "10.0.0.0/16"\n}\n')
    # A local module and the built-in provider: init needs no network.
    subprocess.run(["terraform", "-chdir=infra", "init", "-input=false", "-no-color"], cwd=workdir, check=True,
                   capture_output=True, timeout=120)
    assert real_library("terraform_apply", dir="infra").ok
    result = real_library("terraform_show", dir="infra")
    assert result.ok, result.content
    assert [r["address"] for r in result.value] == ["terraform_data.web", "module.net.terraform_data.vpc"]
    assert all(r["id"] for r in result.value)
    assert "s3cr3t" not in result.content and "10.0.0.0/16" not in result.content
