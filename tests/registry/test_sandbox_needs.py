"""`nami check` warns about a tool whose program is known to need what its sandbox does not declare (the
host's processes, the network, a hidden configuration folder), with the `sandbox:` line to write; the
table is runners/sandbox/known_programs.py's, which also words a result's hint (tests/runners/test_sandbox.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nami_yaml.errors import SpecError
from nami_yaml.registry.draft import Host
from nami_yaml.registry.loader import check_tools
from nami_yaml.sandbox_settings import SandboxSettings
from tests.helpers import fake_programs, nami, write

PROGRAMS = ("kubectl", "ps", "git", "aws", "grep", "docker", "kill", "sleep")


def warnings(workdir: Path, text: str, sandbox: SandboxSettings | None = None) -> list[str]:
    host = Host(workdir, fake_programs(workdir / "bin", *PROGRAMS), sandbox or SandboxSettings())
    _, problems = check_tools([write(workdir / "t.yaml", text)], host=host)
    return [f"{p.line}:{p.col}: {p.path}: {p.severity}: {p.message}" for p in SpecError(problems).problems]


KUBECTL = "name: pods\ndescription: d\nrisk: read\n{sandbox}command: [kubectl, get, pods]\n"


def test_kubectl_without_sandbox_keys_is_told_the_keys_to_add(workdir: Path) -> None:
    [found] = warnings(workdir, KUBECTL.format(sandbox=""))
    assert found.startswith("4:1: $.command: warning: kubectl needs the network and ~/.kube, ")
    assert found.endswith("add to the tool: sandbox: {network: true, reads: [~/.kube]}")


@pytest.mark.parametrize("sandbox", [
    "sandbox: {network: true, reads: [~/.kube]}\n",
    "sandbox: {network: true, reads: [~/.kube/config, $KUBECONFIG]}\n",  # the library's way
    "sandbox:\n  network: true\n  reads: [~/.kube]\n",
])
def test_kubectl_declaring_the_network_and_its_config_is_not_warned_about(workdir: Path, sandbox: str) -> None:
    assert warnings(workdir, KUBECTL.format(sandbox=sandbox)) == []


def test_what_is_declared_already_is_kept_in_the_line_to_write(workdir: Path) -> None:
    [found] = warnings(workdir, KUBECTL.format(sandbox="sandbox: {network: true, writable: [~/.kube/cache]}\n"))
    assert "kubectl needs ~/.kube, " in found
    assert found.endswith("write its sandbox as: sandbox: {network: true, reads: [~/.kube], writable: [~/.kube/cache]}")


def test_nothing_is_said_where_the_sandbox_is_off_or_the_settings_show_the_path(workdir: Path) -> None:
    text = KUBECTL.format(sandbox="sandbox: {network: true}\n")
    assert warnings(workdir, text) != []
    assert warnings(workdir, text, SandboxSettings(mode="off")) == []
    assert warnings(workdir, text, SandboxSettings(reads=("~/.kube",))) == []
    _, problems = check_tools([workdir / "t.yaml"])  # plain loading (a run) does not look
    assert problems == []


@pytest.mark.parametrize(("runner", "yaml"), [
    ("command: [ps, aux]", "sandbox: {reads: [/proc]}"),
    ("command: [/usr/bin/ps, aux]", "sandbox: {reads: [/proc]}"),
    ("script: ps aux | grep -v grep | grep \"$name\"", "sandbox: {reads: [/proc]}"),
    ("command: [git, fetch, origin]", "sandbox: {network: true}"),
    ("script: aws s3 ls && kubectl get pods", "sandbox: {network: true, reads: [~/.aws, ~/.kube]}"),
    ("command: [docker, ps]", "sandbox: {reads: [/var/run/docker.sock]}"),
])
def test_programs_that_need_more_than_the_defaults(workdir: Path, runner: str, yaml: str) -> None:
    params = "parameters: {type: object, properties: {name: {type: string}}}\n" if "$name" in runner else ""
    [found] = warnings(workdir, f"name: t\ndescription: d\nrisk: read\n{params}{runner}\n")
    assert found.endswith(yaml), found


@pytest.mark.parametrize("runner", [
    "command: [git, status]",  # git reaches the network only with fetch, pull, push...
    "command: [grep, -r, kubectl, .]",  # a program named as an argument is not run
    "script: echo ps aux",
    "command: [ps, aux]\nsandbox: {reads: [/proc]}",
    "script: sleep 9 & kill $!",  # a script's kill most often ends a job of its own
])
def test_programs_that_do_not(workdir: Path, runner: str) -> None:
    assert warnings(workdir, f"name: t\ndescription: d\nrisk: read\n{runner}\n") == []


def test_kill_is_told_no_key_of_a_tool_reaches_the_host_s_processes(workdir: Path) -> None:
    [found] = warnings(workdir, "name: t\ndescription: d\nparameters: {type: object, properties: {pid: {type: integer}}, required: [pid]}\n"
                                "command: [kill, '{pid}']\nsandbox: {reads: [/proc]}\n")
    assert found.endswith("$.command: warning: kill cannot signal the host's processes from the sandbox: a call's "
                          "processes are its own, whatever its tool declares; only sandbox: {mode: off} in "
                          "agent.yaml runs tools as they are (every one)")


def test_nami_check_warns_and_says_nothing_with_the_sandbox_off(workdir: Path) -> None:
    write(workdir / "tools" / "pods.yaml", KUBECTL.format(sandbox=""))
    write(workdir / "agent.yaml", "tools: {builtin: [], files: [tools/pods.yaml]}\n")
    env = {"PATH": fake_programs(workdir / "bin", "kubectl")}
    result = nami("check", env=env)
    assert "tools/pods.yaml:4:1: $.command: warning: kubectl needs the network and ~/.kube" in result.output
    write(workdir / "agent.yaml", "tools: {builtin: [], files: [tools/pods.yaml]}\nsandbox: {mode: off}\n")
    result = nami("check", env=env)
    assert result.exit_code == 0 and "warning" not in result.output, result.output


def test_the_library_declares_what_its_programs_need(workdir: Path) -> None:
    """The table and the library agree: every library tool already has the keys nami check would ask for."""
    import nami_yaml.library

    files = sorted(Path(next(iter(nami_yaml.library.__path__))).rglob("*.yaml"))
    assert any(f.parent.name == "kubectl" for f in files)
    _, problems = check_tools(files, host=Host(workdir, None))
    said = [str(p) for p in problems if "sandbox" in p.message]
    assert said == []
